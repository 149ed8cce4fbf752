// Package shipping is a workflow that other workflows run as a child: the
// order workflow's Ship step (//dag:child) builds a Shipment, the engine
// starts a Shipment run under the order's tenant and waits for it without
// holding a worker, and Ship completes with the run's result, the Label
// that result=BuyLabel names.
//
//	Pack ─ BuyLabel (result)
//
// A Shipment run can also be started on its own, like any workflow.
package shipping
