/**
 * Retries: transparent retries of attempts the server never saw, per-method {@link io.reverb.rpc.RetryPolicy}
 * for calls marked idempotent, and the channel's {@link io.reverb.rpc.retry.RetryThrottle} budget that stops
 * retries from storming a struggling service. {@link io.reverb.rpc.retry.RetryState} applies the rules to one call.
 */
package io.reverb.rpc.retry;
