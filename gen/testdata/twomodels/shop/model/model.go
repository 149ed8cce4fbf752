// Package model is the shop's model: what a customer orders.
package model

// Receipt is what the shop hands the customer.
type Receipt struct {
	Item string
}
