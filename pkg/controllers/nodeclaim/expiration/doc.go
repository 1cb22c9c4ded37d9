// Package expiration deletes NodeClaims that have lived longer than their spec.expireAfter (copied from the
// NodePool template when the claim was made). Expiration is forceful: disruption budgets and do-not-disrupt
// pods don't hold it back; the claim's terminationGracePeriod is what bounds how long the drain may wait.
package expiration
