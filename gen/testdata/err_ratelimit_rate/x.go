package ratelimit_rate

import "context"

// rate= is required, N/s, N/m or N/h with N positive; burst= is a
// positive integer. A step naming a broken limit is not blamed again.

//dag:ratelimit burst=10
const Stripe = "stripe"

//dag:ratelimit rate=100
const Mail = "mail"

//dag:ratelimit rate=100/d
const Geo = "geo"

//dag:ratelimit rate=0/s
const Fax = "fax"

//dag:ratelimit rate=fast
const Sms = "sms"

//dag:ratelimit rate=1e3/s
const Push = "push"

//dag:ratelimit rate=10/s burst=0
const Chat = "chat"

//dag:ratelimit rate=10/s burst=many
const Voice = "voice"

//dag:workflow
type Order struct{ ID string }

//dag:step ratelimit=stripe
func Charge(ctx context.Context, o Order) error { return nil }
