/**
 * The live counters of a Reverb process in one memory-mapped file per process, in Agrona's counters layout (as
 * Aeron's CnC file): {@link io.reverb.common.counters.ProcessCounters} (the writer both layers share: the engine's
 * connections and pollers, rpc-core's server methods), {@link io.reverb.common.counters.CounterGroup} (the counters
 * of one thing, freed together), {@link io.reverb.common.counters.CountersDirectory} and
 * {@link io.reverb.common.counters.LiveProcess} (the reader's side, used by {@code bin/reverb-stat}), and
 * {@link io.reverb.common.counters.CountersLayout} (the file's layout). The only package of reverb-common that
 * depends on Agrona.
 */
package io.reverb.common.counters;
