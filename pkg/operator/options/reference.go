package options

// Setting describes one setting for its reference documentation (docs/settings.md, written by
// hack/settingsdoc). Every field comes from the settings table Parse reads.
type Setting struct {
	// Env is the environment variable, e.g. BATCH_MAX_DURATION.
	Env string
	// Flag is the command-line flag without its dashes, e.g. batch-max-duration.
	Flag string
	// Default is the value used when neither the flag nor the variable is set; empty means none.
	Default string
	// Description is the one-line help lathe --help prints.
	Description string
	// Accepts says which values parse, e.g. "duration ≥ 1m (e.g. 500ms, 10s, 1m)".
	Accepts string
	// Notes are the reference's remarks beyond the help line (Markdown); often empty.
	Notes string
}

// Reference returns every setting in the order lathe --help prints them.
func Reference() []Setting {
	table := settings(&Options{})
	out := make([]Setting, 0, len(table))
	for _, s := range table {
		out = append(out, Setting{Env: s.env, Flag: s.flagName(), Default: s.def, Description: s.usage, Accepts: s.accepts, Notes: s.doc})
	}
	return out
}
