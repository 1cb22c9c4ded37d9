// Package docs holds the tests that keep the documentation honest: every relative link in README.md and
// docs/*.md leads to a file (and heading) that exists, and the IAM policy the EKS guide installs allows
// every AWS API call the AWS provider makes.
package docs
