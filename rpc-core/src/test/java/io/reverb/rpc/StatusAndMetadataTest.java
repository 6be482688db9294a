package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class StatusAndMetadataTest
{
    @Test
    void shouldCarryGrpcCodeNumbers()
    {
        assertThat(StatusCode.values()).hasSize(17);
        assertThat(StatusCode.OK.value()).isZero();
        assertThat(StatusCode.CANCELLED.value()).isEqualTo(1);
        assertThat(StatusCode.DEADLINE_EXCEEDED.value()).isEqualTo(4);
        assertThat(StatusCode.RESOURCE_EXHAUSTED.value()).isEqualTo(8);
        assertThat(StatusCode.UNIMPLEMENTED.value()).isEqualTo(12);
        assertThat(StatusCode.UNAVAILABLE.value()).isEqualTo(14);
        assertThat(StatusCode.UNAUTHENTICATED.value()).isEqualTo(16);
        for (final StatusCode code : StatusCode.values())
        {
            assertThat(StatusCode.fromValue(code.value())).isSameAs(code);
        }
        assertThat(StatusCode.fromValue(99)).isSameAs(StatusCode.UNKNOWN);
    }

    @Test
    void shouldDeriveStatusWithDescriptionAndCause()
    {
        final IllegalStateException cause = new IllegalStateException("x");
        final Status status = Status.NOT_FOUND.withDescription("gone").withCause(cause);
        assertThat(status.code()).isEqualTo(StatusCode.NOT_FOUND);
        assertThat(status.description()).isEqualTo("gone");
        assertThat(status.cause()).isSameAs(cause);
        assertThat(Status.NOT_FOUND.description()).isNull();
        assertThat(Status.OK.isOk()).isTrue();
        final RpcException e = status.asException();
        assertThat(e.status()).isSameAs(status);
        assertThat(e.trailers().isEmpty()).isTrue();
        assertThat(e.getMessage()).isEqualTo("NOT_FOUND: gone");
    }

    @Test
    void shouldMapThrowablesToStatus()
    {
        assertThat(Status.fromThrowable(new RuntimeException("boom")).code()).isEqualTo(StatusCode.UNKNOWN);
        assertThat(Status.fromThrowable(new RuntimeException("boom")).description()).isEqualTo("boom");
        assertThat(Status.fromThrowable(new RuntimeException(Status.ABORTED.asException())).code())
            .isEqualTo(StatusCode.ABORTED);
    }

    @Test
    void shouldStoreAsciiAndBinaryMetadata()
    {
        final Metadata.Key<String> ascii = Metadata.Key.of("X-Trace", Metadata.ASCII_STRING_MARSHALLER);
        final Metadata.Key<byte[]> binary = Metadata.Key.of("blob-bin", Metadata.BINARY_BYTE_MARSHALLER);
        final Metadata md = new Metadata();
        md.put(ascii, "a");
        md.put(ascii, "b");
        md.put(binary, new byte[]{0, (byte)0xFF});
        assertThat(ascii.name()).isEqualTo("x-trace");
        assertThat(md.get(ascii)).isEqualTo("b");
        assertThat(md.getAll(ascii)).containsExactly("a", "b");
        assertThat(md.get(binary)).containsExactly(0, 0xFF);
        assertThat(md.remove(ascii, "a")).isTrue();
        assertThat(md.getAll(ascii)).containsExactly("b");
        final Metadata other = new Metadata();
        other.put(ascii, "c");
        md.merge(other);
        assertThat(md.getAll(ascii)).containsExactly("b", "c");
        assertThat(md.removeAll(ascii)).containsExactly("b", "c");
        assertThat(md.containsKey(ascii)).isFalse();
        assertThat(md.keys()).containsExactly("blob-bin");
    }

    @Test
    void shouldRejectInvalidMetadataKeysAndValues()
    {
        assertThatThrownBy(() -> Metadata.Key.of("bad key", Metadata.ASCII_STRING_MARSHALLER))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Metadata.Key.of("x-bin", Metadata.ASCII_STRING_MARSHALLER))
            .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Metadata.Key.of("x", Metadata.BINARY_BYTE_MARSHALLER))
            .isInstanceOf(IllegalArgumentException.class);
        final Metadata.Key<String> key = Metadata.Key.of("x", Metadata.ASCII_STRING_MARSHALLER);
        assertThatThrownBy(() -> new Metadata().put(key, "caf\u00e9")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void shouldBuildMethodDescriptor()
    {
        final MethodDescriptor<StringValue, StringValue> m = TestService.ECHO;
        assertThat(MethodDescriptor.generateFullMethodName("pkg.Svc", "M")).isEqualTo("pkg.Svc/M");
        assertThat(m.serviceName()).isEqualTo(TestService.SERVICE);
        assertThat(m.methodName()).isEqualTo("Echo");
        assertThat(m.type()).isEqualTo(MethodDescriptor.MethodType.UNARY);
        assertThatThrownBy(() -> m.toBuilder().fullMethodName("NoSlash").build()).isInstanceOf(IllegalArgumentException.class);
        assertThat(ServerCalls.unimplemented(m).status().description())
            .isEqualTo("Method reverb.test.TestService/Echo is unimplemented");
        assertThat(ServerCalls.unimplemented(m).status().code()).isEqualTo(StatusCode.UNIMPLEMENTED);
    }

    @Test
    void shouldDeriveCallOptionsImmutably()
    {
        final Metadata.Key<String> key = Metadata.Key.of("k", Metadata.ASCII_STRING_MARSHALLER);
        final Metadata a = new Metadata();
        a.put(key, "1");
        final Metadata b = new Metadata();
        b.put(key, "2");
        final CallOptions options = CallOptions.DEFAULT.withMetadata(a).withMetadata(b)
            .withDeadlineAfter(Duration.ofSeconds(5)).withWaitForReady();
        assertThat(options.metadata().getAll(key)).containsExactly("1", "2");
        assertThat(options.deadline().isExpired()).isFalse();
        assertThat(options.isWaitForReady()).isTrue();
        assertThat(CallOptions.DEFAULT.deadline()).isNull();
        assertThat(CallOptions.DEFAULT.metadata()).isNull();
        assertThat(CallOptions.DEFAULT.isWaitForReady()).isFalse();
    }

    @Test
    void shouldUseInjectedTickerForDeadlines()
    {
        final long[] now = {1_000};
        final Deadline deadline = Deadline.after(100, TimeUnit.NANOSECONDS, () -> now[0]);
        assertThat(deadline.isExpired()).isFalse();
        now[0] += 100;
        assertThat(deadline.isExpired()).isTrue();
    }
}
