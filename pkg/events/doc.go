// Package events publishes Kubernetes events about Lathe's decisions (why a pod was nominated, why it could
// not be placed, why a node is being removed) with de-duplication, so a loop that reconciles the same
// object every few seconds does not flood the API server.
//
// Each controller package keeps an events.go of constructors that return Event values; controllers publish
// them through the Recorder they were given.
package events
