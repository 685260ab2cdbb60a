package command

// groups lists every command group's rows. Each group file has a function returning fresh rows, so adding a
// command touches one file.
func groups() [][]*Command {
	return [][]*Command{
		connectionCommands(),
		keyspaceCommands(),
		stringCommands(),
		hashCommands(),
		setCommands(),
		zsetCommands(),
		blockingZSetCommands(),
		geoCommands(),
		listCommands(),
		sortCommands(),
		dumpCommands(),
		migrateCommands(),
		streamCommands(),
		bitCommands(),
		hllCommands(),
		serverCommands(),
		moduleCommands(),
		persistenceCommands(),
		rateLimitCommands(),
		rlsCommands(),
		transactionCommands(),
		scriptingCommands(),
		aclCommands(),
		pubsubCommands(),
		raftCommands(),
		clusterxCommands(),
		clusterCommands(),
	}
}

// Default builds the full command table. Each call returns fresh rows, so in-process servers in tests keep separate statistics.
func Default() *Table { return NewTable(groups()...) }
