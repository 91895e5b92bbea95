package spec

// Overrides splits a campaign's stored experiment text (Campaign.SpecText:
// the file as read, then its --set overrides as comments) into the file
// and the overrides, in the order they were given: what --resume applies
// again, and what a command line that repeats the run passes to --set.
func Overrides(text string) (file string, sets []string) { return splitText(text) }
