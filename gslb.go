// Package gslb is a CoreDNS plugin that answers A/AAAA with the best node for
// the client's location, carrier and the nodes' health and load.
package gslb
