package command

func stringCommands() []*Command { return nil }
