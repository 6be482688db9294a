import io.reverb.codegen.test.kinds.KindsRpc;
import io.reverb.codegen.test.kinds.LegacyRpc;
import io.reverb.codegen.test.kinds.Request;
import io.reverb.codegen.test.kinds.Response;
import io.reverb.codegen.test.model.ModelProtos;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.RpcChannel;
import io.reverb.rpc.RpcException;
import io.reverb.rpc.ServiceDefinition;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reverb.test.clash.NameClashOuterClass;
import reverb.test.clash.ObjectRpc;
import reverb.test.plain.EmptyRpc;
import reverb.test.plain.FirstRpc;
import reverb.test.plain.PlainFile;
import reverb.test.plain.SecondRpc;
import reverb.test.record.var.yield.sealed.permits.Contextual;
import reverb.test.record.var.yield.sealed.permits.LedgerRpc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Compiled by GeneratedCodeCompilesTest together with the generated sources (in the unnamed package, so it
 * can see EchoRpc). Its declarations pin the shapes of the generated API; run() exercises the service base.
 */
@SuppressWarnings("deprecation")
public final class GeneratedCodeUsage
{
    // The stub shapes: assigning to these functional types fails to compile if a shape is wrong.
    static void shapes(final RpcChannel channel)
    {
        final KindsRpc.KindsReactorStub stub = KindsRpc.newReactorStub(channel)
            .withDeadlineAfter(Duration.ofSeconds(1))
            .withMetadata(new io.reverb.rpc.Metadata())
            .withWaitForReady();
        final Function<Request, Mono<Response>> unary = stub::unary;
        final Function<Mono<Request>, Mono<Response>> unaryMono = stub::unary;
        final Function<Request, Flux<Response.Part>> serverStream = stub::serverStream;
        final Function<Mono<Request>, Flux<Response.Part>> serverStreamMono = stub::serverStream;
        final Function<Flux<ModelProtos.Point>, Mono<ModelProtos.Point.Area.Summary>> clientStream = stub::clientStream;
        final Function<Flux<ModelProtos.Note>, Flux<ModelProtos.Note>> bidi = stub::bidi;
        final Function<com.google.protobuf.Empty, Mono<com.google.protobuf.Timestamp>> ping = stub::ping;
        final Function<ModelProtos.Point.Area, Mono<com.google.protobuf.Empty>> snake = stub::snakeCaseMethod;

        final ObjectRpc.ObjectReactorStub objects = ObjectRpc.newReactorStub(channel);
        final Function<NameClashOuterClass.Msg, Mono<NameClashOuterClass.Msg>> getClass = objects::getClass_;
        final Function<NameClashOuterClass.Msg, Mono<NameClashOuterClass.Msg>> keyword = objects::class_;
        final Function<NameClashOuterClass.Msg, Flux<NameClashOuterClass.Msg>> defaultKeyword = objects::default_;
        final Function<Flux<NameClashOuterClass.Msg>, Mono<NameClashOuterClass.Msg>> newKeyword = objects::new_;
        final Function<NameClashOuterClass.Msg, Mono<NameClashOuterClass.Msg>> channelMethod = objects::channel_;
        final Function<NameClashOuterClass.Msg, Mono<NameClashOuterClass.Msg>> compression = objects::withCompression_;
        final Function<NameClashOuterClass.Msg, Mono<NameClashOuterClass.Msg>> digit = objects::verify2fa;
        final Function<NameClashOuterClass.Msg, Mono<NameClashOuterClass.Msg>> underscore = objects::_Internal;
        final MethodDescriptor<NameClashOuterClass.Msg, NameClashOuterClass.Msg> digitDescriptor =
            ObjectRpc.getVerify2faMethod();
        final MethodDescriptor<NameClashOuterClass.Msg, NameClashOuterClass.Msg> underscoreDescriptor =
            ObjectRpc.getInternalMethod();
        final RpcChannel inherited = objects.channel();

        final Function<PlainFile.Ask, Flux<PlainFile.Answer>> query = SecondRpc.newReactorStub(channel)::query;
        final Function<NoPackage.Hello, Mono<NoPackage.Hello>> echo = EchoRpc.newReactorStub(channel)::echo;
        final EmptyRpc.EmptyReactorStub empty = EmptyRpc.newReactorStub(channel);
        final LegacyRpc.LegacyReactorStub legacy = LegacyRpc.newReactorStub(channel);
        final FirstRpc.FirstReactorStub first = FirstRpc.newReactorStub(channel);
        final MethodDescriptor<Request, Response> descriptor = KindsRpc.METHOD_UNARY;
        final Function<Contextual.Entry, Flux<Contextual.Entry>> watch = LedgerRpc.newReactorStub(channel)::watch;
    }

    /**
     * @return one line per check, read by the test.
     */
    public static List<String> run()
    {
        final List<String> results = new ArrayList<>();
        final ServiceDefinition kinds = new KindsRpc.KindsImplBase()
        {
            @Override
            public Mono<Response> unary(final Request request)
            {
                return Mono.just(Response.newBuilder().setMessage("hello " + request.getName()).build());
            }
        }.bindService();

        results.add("service " + kinds.serviceName() + " methods " + kinds.methods().size());
        results.add("unary " + Flux.from(kinds.method("reverb.test.kinds.Kinds/Unary").handler()
            .handle((Flux)Flux.just(Request.newBuilder().setName("reverb").build())))
            .map(response -> ((Response)response).getMessage())
            .blockLast(Duration.ofSeconds(5)));
        results.add("ServerStream " + errorOf(kinds, "reverb.test.kinds.Kinds/ServerStream", Flux.just(Request.getDefaultInstance())));
        results.add("ClientStream " + errorOf(kinds, "reverb.test.kinds.Kinds/ClientStream", Flux.just(ModelProtos.Point.getDefaultInstance())));
        results.add("Bidi " + errorOf(kinds, "reverb.test.kinds.Kinds/Bidi", Flux.just(ModelProtos.Note.getDefaultInstance())));
        results.add("Ping " + errorOf(kinds, "reverb.test.kinds.Kinds/Ping", Flux.just(com.google.protobuf.Empty.getDefaultInstance())));

        final ServiceDefinition objects = new ObjectRpc.ObjectImplBase()
        {
        }.bindService();
        results.add("service " + objects.serviceName() + " methods " + objects.methods().size());
        results.add("GetClass " + errorOf(objects, "reverb.test.clash.Object/GetClass", Flux.just(NameClashOuterClass.Msg.getDefaultInstance())));
        results.add("class " + errorOf(objects, "reverb.test.clash.Object/class", Flux.just(NameClashOuterClass.Msg.getDefaultInstance())));
        results.add("empty service methods " + new EmptyRpc.EmptyImplBase()
        {
        }.bindService().methods().size());
        results.add("echo " + EchoRpc.getEchoMethod().fullMethodName() + " " + EchoRpc.getEchoMethod().type());
        results.add("descriptor " + kinds.protoDescriptor().getFullName() + " in " +
            kinds.protoDescriptor().getFile().getName() + " methods " + kinds.protoDescriptor().getMethods().size());
        results.add("descriptor " + objects.protoDescriptor().getFullName() + " in " +
            objects.protoDescriptor().getFile().getName());
        final ServiceDefinition ledger = new LedgerRpc.LedgerImplBase()
        {
        }.bindService();
        results.add("service " + ledger.serviceName() + " methods " + ledger.methods().size());
        return results;
    }

    @SuppressWarnings({"rawtypes", "unchecked"})
    private static String errorOf(final ServiceDefinition service, final String method, final Flux requests)
    {
        try
        {
            Flux.from(service.method(method).handler().handle(requests)).blockLast(Duration.ofSeconds(5));
            return "no error";
        }
        catch (final RpcException ex)
        {
            return ex.status().code() + ": " + ex.status().description();
        }
    }
}
