// Package model is billing's model: what is charged. It shares its name
// with the shop's model package.
package model

// Receipt is what billing records for a charge.
type Receipt struct {
	Cents int64
}
