// Package sdkhttp is the HTTP client Lathe gives the AWS SDK. It wraps the SDK's own client against one
// race between the SDK and net/http: the SDK closes a request's body as soon as the response headers
// arrive, while net/http may still be finishing the request's write. If the body then answers the
// transport's final drain with io.EOF as an error (the SDK's body does, through WriteTo), the transport
// takes the write as failed and closes the connection the response body is still being read from. The
// read fails ("use of closed network connection") and the SDK retries an operation the service has
// already carried out: an SQS receive retried that way finds its messages hidden for the visibility
// timeout, and returns none.
package sdkhttp
