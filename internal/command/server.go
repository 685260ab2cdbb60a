package command

func serverCommands() []*Command { return nil }
