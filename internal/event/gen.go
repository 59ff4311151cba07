package event

// The kinds are declared once, in kinds.tsv; genkinds writes the Go, C and
// storage tables from it.
//go:generate go run ./genkinds
