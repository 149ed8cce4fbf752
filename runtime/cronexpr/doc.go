// Package cronexpr reads the cron expressions of schedules (//dag:schedule
// and Engine.CreateSchedule) in a time zone and lists their slots. The
// generator checks expressions with it, and the engine fires schedules
// with it, so both read an expression the same way.
//
// An expression has the five standard fields (minute, hour, day of month,
// month, day of week), or is one of the descriptors @yearly (@annually),
// @monthly, @weekly, @daily (@midnight) and @hourly. Parsing is done by
// github.com/robfig/cron/v3.
//
// Daylight saving time, in a zone that has it: a slot is an instant whose
// wall time in the zone matches the expression. So a wall time that does
// not exist on the day the clocks go forward (02:30 when 02:00 jumps to
// 03:00) is no slot that day, and a wall time that happens twice on the day
// they go back (01:30 when 02:00 goes back to 01:00) is two slots, an hour
// apart, each with its own run (a slot's key is its instant in UTC). A
// schedule that fires every hour fires every real hour through both. To
// run exactly once a day whatever the zone does, pick a time outside 01:00
// to 03:00, or the zone UTC.
package cronexpr
