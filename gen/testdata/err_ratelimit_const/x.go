package ratelimit_const

import "context"

// A rate limit is named by the value of one string constant.

//dag:ratelimit rate=10/s
const Stripe = 1

//dag:ratelimit rate=10/s
const Mail, Geo = "mail", "geo"

//dag:ratelimit rate=10/s
const Empty = ""

const (
	//dag:ratelimit rate=1/s
	Fax = iota
)

//dag:ratelimit rate=10/s
var Sms = "sms"

//dag:ratelimit rate=10/s
func Limit() {}

//dag:ratelimit rate=10/s
type Name string

//dag:workflow
type Order struct{ ID string }

//dag:step
func Charge(ctx context.Context, o Order) error { return nil }
