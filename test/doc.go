// Package test runs the gslb plugin inside real CoreDNS servers started from
// Corefile strings, the way CoreDNS's own test/server.go does. Its files are
// all tests: this one gives the package its comment.
package test
