package io.reverb.examples.migration;

import io.grpc.stub.StreamObserver;

/**
 * The existing grpc-java implementation: not one line changes to serve it over Reverb.
 */
public final class GreeterService extends GreeterGrpc.GreeterImplBase
{
    @Override
    public void sayHello(final HelloRequest request, final StreamObserver<HelloReply> responses)
    {
        responses.onNext(HelloReply.newBuilder().setMessage("Hello " + request.getName()).build());
        responses.onCompleted();
    }
}
