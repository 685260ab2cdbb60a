package command

func bitCommands() []*Command { return nil }
