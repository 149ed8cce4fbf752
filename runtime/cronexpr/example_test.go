package cronexpr_test

import (
	"fmt"
	"time"

	"github.com/dagenhq/dagen/runtime/cronexpr"
)

func Example() {
	s, err := cronexpr.Parse("0 3 * * 1-5", "Europe/Paris") // 03:00 on weekdays, Paris time
	if err != nil {
		panic(err)
	}
	friday := time.Date(2026, time.March, 6, 12, 0, 0, 0, time.UTC)
	fmt.Println(s.Next(friday)) // the next slot is Monday's, in UTC
	// Output: 2026-03-09 02:00:00 +0000 UTC
}
