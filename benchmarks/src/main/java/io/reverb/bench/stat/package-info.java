/**
 * {@code reverb-stat}: prints the live counters of this user's Reverb processes on this host from their counters
 * files ({@link io.reverb.common.counters.ProcessCounters}); needs no registry, agent or port.
 */
package io.reverb.bench.stat;
