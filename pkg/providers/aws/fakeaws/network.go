package fakeaws

// networkState is this area's part of the fake's state. (Skeleton: the area's state and handlers go in this file
// and its siblings.)
type networkState struct{}
