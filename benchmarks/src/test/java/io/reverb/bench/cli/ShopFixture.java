package io.reverb.bench.cli;

import com.google.protobuf.Any;
import com.google.protobuf.Descriptors.FileDescriptor;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.protobuf.ProtoFileDescriptorSupplier;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ServerCalls;
import io.reverb.bench.clitest.Item;
import io.reverb.bench.clitest.ItemRequest;
import io.reverb.bench.clitest.ListRequest;
import io.reverb.bench.clitest.Note;
import io.reverb.bench.clitest.ShopOuterClass;
import io.reverb.bench.clitest.ShopRpc;
import io.reverb.rpc.Metadata;
import io.reverb.rpc.RpcContext;
import io.reverb.rpc.Status;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

// CHECKSTYLE.OFF: InlineFullyQualifiedName (grpc-java's Metadata, Status, CallOptions... beside Reverb's)
/**
 * The test service {@code reverb.bench.clitest.Shop} (not the echo service), served natively (Reverb's generated
 * {@link ShopRpc.ShopImplBase}) or through grpc-java (a hand-built {@link ServerServiceDefinition} with the file's
 * descriptor, as grpc-java's reflection wants it), both counting their calls so that tests can check how many arrived.
 *
 * <p>{@code GetItem} answers an item named as asked, priced 100 cents a letter, with the {@code x-note} header in an
 * {@code Any} ({@link Note}); the name {@code missing} is NOT_FOUND. {@code ListItems} streams {@code count} items
 * named {@code prefix0}, {@code prefix1}, ... Calls are counted under {@code get:NAME:NOTE} and {@code list:PREFIX}.
 */
public final class ShopFixture
{
    /** The service's full name. */
    public static final String SERVICE = "reverb.bench.clitest.Shop";

    private static final Metadata.Key<String> NOTE = Metadata.Key.of("x-note", Metadata.ASCII_STRING_MARSHALLER);
    private static final io.grpc.Metadata.Key<String> GRPC_NOTE =
        io.grpc.Metadata.Key.of("x-note", io.grpc.Metadata.ASCII_STRING_MARSHALLER);
    private static final Context.Key<String> NOTE_IN_CONTEXT = Context.key("x-note");

    private final Map<String, AtomicLong> calls = new ConcurrentHashMap<>();

    /**
     * @param key {@code get:NAME:NOTE} or {@code list:PREFIX}.
     * @return how many such calls the service received.
     */
    public long calls(final String key)
    {
        final AtomicLong count = calls.get(key);
        return count == null ? 0 : count.get();
    }

    private void count(final String key)
    {
        calls.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
    }

    /**
     * @return the service for a Reverb server.
     */
    public ShopRpc.ShopImplBase nativeShop()
    {
        return new ShopRpc.ShopImplBase()
        {
            @Override
            public Mono<Item> getItem(final ItemRequest request)
            {
                return RpcContext.current().flatMap(context ->
                {
                    final String note = String.valueOf(context.metadata().get(NOTE));
                    count("get:" + request.getName() + ":" + note);
                    if ("missing".equals(request.getName()))
                    {
                        return Mono.error(Status.NOT_FOUND.withDescription("no item named missing").asException());
                    }
                    return Mono.just(item(request, note));
                });
            }

            @Override
            public Flux<Item> listItems(final ListRequest request)
            {
                count("list:" + request.getPrefix());
                return Flux.range(0, request.getCount()).map(i -> Item.newBuilder()
                    .setName(request.getPrefix() + i).setPriceCents(i).build());
            }
        };
    }

    /**
     * @return the service for a grpc-java server (Netty, or reverb-grpc's), with the interceptor that reads
     *     {@code x-note}.
     */
    public ServerServiceDefinition grpcShop()
    {
        final FileDescriptor file = ShopOuterClass.getDescriptor();
        final MethodDescriptor<ItemRequest, Item> getItem = MethodDescriptor.<ItemRequest, Item>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(SERVICE + "/GetItem")
            .setRequestMarshaller(ProtoUtils.marshaller(ItemRequest.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(Item.getDefaultInstance()))
            .build();
        final MethodDescriptor<ListRequest, Item> listItems = MethodDescriptor.<ListRequest, Item>newBuilder()
            .setType(MethodDescriptor.MethodType.SERVER_STREAMING)
            .setFullMethodName(SERVICE + "/ListItems")
            .setRequestMarshaller(ProtoUtils.marshaller(ListRequest.getDefaultInstance()))
            .setResponseMarshaller(ProtoUtils.marshaller(Item.getDefaultInstance()))
            .build();
        final ServiceDescriptor descriptor = ServiceDescriptor.newBuilder(SERVICE)
            .setSchemaDescriptor((ProtoFileDescriptorSupplier)() -> file)
            .addMethod(getItem)
            .addMethod(listItems)
            .build();
        final ServerServiceDefinition shop = ServerServiceDefinition.builder(descriptor)
            .addMethod(getItem, ServerCalls.asyncUnaryCall((request, responses) ->
            {
                final String note = String.valueOf(NOTE_IN_CONTEXT.get());
                count("get:" + request.getName() + ":" + note);
                if ("missing".equals(request.getName()))
                {
                    responses.onError(io.grpc.Status.NOT_FOUND.withDescription("no item named missing").asException());
                    return;
                }
                responses.onNext(item(request, note));
                responses.onCompleted();
            }))
            .addMethod(listItems, ServerCalls.asyncServerStreamingCall((request, responses) ->
            {
                count("list:" + request.getPrefix());
                for (int i = 0; i < request.getCount(); i++)
                {
                    responses.onNext(Item.newBuilder().setName(request.getPrefix() + i).setPriceCents(i).build());
                }
                responses.onCompleted();
            }))
            .build();
        return ServerInterceptors.intercept(shop, new NoteInterceptor());
    }

    private static Item item(final ItemRequest request, final String note)
    {
        return Item.newBuilder()
            .setName(request.getName())
            .setPriceCents(100L * request.getName().length())
            .setExtra(Any.pack(Note.newBuilder().setText(note).build()))
            .build();
    }

    /** Puts the x-note header where the Shop handler reads it. */
    private static final class NoteInterceptor implements ServerInterceptor
    {
        @Override
        public <Q, R> ServerCall.Listener<Q> interceptCall(final ServerCall<Q, R> call, final io.grpc.Metadata headers,
            final ServerCallHandler<Q, R> next)
        {
            return Contexts.interceptCall(Context.current().withValue(NOTE_IN_CONTEXT, headers.get(GRPC_NOTE)), call,
                headers, next);
        }
    }
}
// CHECKSTYLE.ON: InlineFullyQualifiedName
