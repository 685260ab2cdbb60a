package command

func keyspaceCommands() []*Command { return nil }
