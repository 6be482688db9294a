package io.reverb.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.StringValue;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * {@link RpcServer.Builder#fallbackHandlerRegistry}: a method not among the services is looked up there when its call
 * comes (so the registry may change while the server runs), after the services; a method in neither, or one the
 * registry fails to look up, ends the call without running anything.
 */
class FallbackHandlerRegistryTest
{
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final MethodDescriptor<StringValue, StringValue> REGISTERED = method("Registered");
    private static final MethodDescriptor<StringValue, StringValue> LATE = method("Late");
    private static final MethodDescriptor<StringValue, StringValue> FAILING = method("Failing");

    private static MethodDescriptor<StringValue, StringValue> method(final String name)
    {
        return MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY)
            .fullMethodName(MethodDescriptor.generateFullMethodName("reverb.test.Fallback", name))
            .requestMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .responseMarshaller(ProtoMarshaller.of(StringValue.getDefaultInstance()))
            .build();
    }

    private static ServiceDefinition.ServerMethodDefinition<StringValue, StringValue> answering(
        final MethodDescriptor<StringValue, StringValue> method, final String answer)
    {
        return ServiceDefinition.ServerMethodDefinition.of(method, ServerCalls.unary(r -> Mono.just(StringValue.of(answer))));
    }

    @Test
    void shouldServeMethodsOfTheFallbackRegistryAfterTheServicesAndRefuseTheRest()
    {
        final String uri = "inproc://fallback-" + NAMES.incrementAndGet();
        final Map<String, ServiceDefinition.ServerMethodDefinition<?, ?>> registry = new ConcurrentHashMap<>();
        final AtomicInteger lookups = new AtomicInteger();
        registry.put(REGISTERED.fullMethodName(), answering(REGISTERED, "fallback"));
        try (RpcServer server = RpcServer.builder(uri)
                .addService(ServiceDefinition.builder("reverb.test.Fallback")
                    .addMethod(REGISTERED, ServerCalls.unary(r -> Mono.just(StringValue.of("service")))).build())
                .fallbackHandlerRegistry(name ->
                {
                    lookups.incrementAndGet();
                    if (name.equals(FAILING.fullMethodName()))
                    {
                        throw new IllegalStateException("registry broken");
                    }
                    return registry.get(name);
                })
                .build().start();
            RpcChannel channel = RpcChannel.builder(List.of(uri)).build())
        {
            final StringValue any = StringValue.of("");
            assertThat(channel.newUnaryCall(REGISTERED, CallOptions.DEFAULT, any).block(TIMEOUT).getValue())
                .as("the services first").isEqualTo("service");
            assertThat(lookups).as("a method of the services is not looked up in the registry").hasValue(0);

            assertThatThrownBy(() -> channel.newUnaryCall(LATE, CallOptions.DEFAULT, any).block(TIMEOUT))
                .isInstanceOfSatisfying(RpcException.class,
                    e -> assertThat(e.status().code()).isEqualTo(StatusCode.UNIMPLEMENTED));
            registry.put(LATE.fullMethodName(), answering(LATE, "late"));
            assertThat(channel.newUnaryCall(LATE, CallOptions.DEFAULT, any).block(TIMEOUT).getValue())
                .as("added while the server runs").isEqualTo("late");

            assertThatThrownBy(() -> channel.newUnaryCall(FAILING, CallOptions.DEFAULT, any).block(TIMEOUT))
                .isInstanceOfSatisfying(RpcException.class,
                    e -> assertThat(e.status().code()).isEqualTo(StatusCode.INTERNAL));
            assertThat(lookups).hasValue(3);
        }
    }
}
