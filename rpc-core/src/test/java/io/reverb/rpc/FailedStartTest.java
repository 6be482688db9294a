package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.common.counters.ProcessCounters;
import org.junit.jupiter.api.Test;

/**
 * A server whose {@code start()} fails (its address in use) holds nothing afterwards: the counters it registered in
 * the process's counters file at build are released (reverb-stat showed a server that did not exist, for the life of
 * the process, and the file stayed mapped), and it reports itself terminated. A caller of
 * {@code builder.build().start()} has no server to close.
 */
class FailedStartTest
{
    @Test
    void shouldReleaseWhatAServerThatCannotStartHolds() throws Exception
    {
        final String uri = "inproc://failed-start-" + System.nanoTime();
        final ProcessCounters process = ProcessCounters.acquire();
        try
        {
            final RpcServer first = RpcServer.builder(uri).addService(new TestService()).build().start();
            final RpcServer second = RpcServer.builder(uri).addService(new TestService()).build();
            assertThatThrownBy(second::start).isInstanceOfSatisfying(RpcException.class,
                e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNAVAILABLE));
            assertThat(second.isTerminated()).isTrue();
            first.close();
            assertThat(first.isTerminated()).isTrue();
            assertThat(process.view().counters()).as("counter groups of either server left")
                .noneMatch(c -> c.group().contains(uri));
            assertThatThrownBy(second::start).isInstanceOf(IllegalStateException.class);
        }
        finally
        {
            process.release();
        }
    }
}
