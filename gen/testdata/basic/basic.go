// Package basic is the smallest useful workflow: two steps in a chain.
package basic

import (
	"context"
	"strings"
)

// Greeting is the workflow input.
//
//dag:workflow
type Greeting struct {
	Name string
}

// Upper shouts the name.
//
//dag:step
func Upper(ctx context.Context, g Greeting) (string, error) {
	return strings.ToUpper(g.Name), nil
}

// Greet greets the shouted name.
//
//dag:step after=Upper
func Greet(ctx context.Context, g Greeting, upper string) (string, error) {
	return "hello, " + upper, nil
}
