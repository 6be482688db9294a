package io.reverb.examples.inference;

import com.google.protobuf.Empty;
import io.reverb.examples.Uris;
import io.reverb.rpc.RpcChannel;
import reactor.core.publisher.Flux;

import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * Sends 4 MiB tensors for inference: {@code InferenceClient [uri] [requests]}.
 */
public final class InferenceClient
{
    /** 1024 x 1024 float32 = 4 MiB per request. */
    public static final int ROWS = 1024;
    /** Columns of the input matrix. */
    public static final int COLUMNS = 1024;

    private static final Duration TIMEOUT = Duration.ofSeconds(30);

    private InferenceClient()
    {
    }

    /**
     * What a run observed.
     *
     * @param model        the model's description.
     * @param bestRows     the best row the server found for each request, in request order.
     * @param bytesSent    tensor bytes sent.
     * @param elapsedNanos wall time of all inference calls.
     */
    public record Result(String model, List<Long> bestRows, long bytesSent, long elapsedNanos)
    {
        /**
         * @return tensor megabytes per second.
         */
        public double megabytesPerSecond()
        {
            return bytesSent / (elapsedNanos / 1e9) / (1024 * 1024);
        }
    }

    /**
     * The input of request {@code index}: every row is noise around 0, except row
     * {@code (index * 131 + 7) % ROWS}, around 1, which the model must find.
     *
     * @param index the request number.
     * @return the 4 MiB input tensor.
     */
    public static Tensor input(final int index)
    {
        final int hotRow = (int)expectedBestRow(index);
        return Tensors.matrix(ROWS, COLUMNS, (row, column) ->
        {
            final float noise = ((row * 31 + column * 17 + index) % 100) / 1000.0f;
            return row == hotRow ? 1.0f + noise : noise;
        });
    }

    /**
     * @param index the request number.
     * @return the row the model should report for {@link #input(int)}.
     */
    public static long expectedBestRow(final int index)
    {
        return (index * 131L + 7) % ROWS;
    }

    /**
     * Sends {@code requests} inference calls, one at a time, each with its own 4 MiB tensor.
     *
     * @param channel  a channel to an InferenceService server.
     * @param requests how many calls.
     * @return what was observed.
     */
    public static Result run(final RpcChannel channel, final int requests)
    {
        // a deadline is a moment fixed when the stub is made (as in gRPC): each call takes a stub with its own
        final InferenceServiceRpc.InferenceServiceReactorStub stub = InferenceServiceRpc.newReactorStub(channel);
        final ModelInfo info = stub.withDeadlineAfter(TIMEOUT).describe(Empty.getDefaultInstance()).block(TIMEOUT);

        final List<InferRequest> inputs = Flux.range(0, requests)
            .map(index -> InferRequest.newBuilder().setModel(InferenceService.MODEL).setInput(input(index)).build())
            .collectList()
            .block();
        final long start = System.nanoTime();
        final List<Long> bestRows = Flux.fromIterable(inputs)
            .concatMap(request -> stub.withDeadlineAfter(TIMEOUT).infer(request))
            .map(InferResponse::getBestRow)
            .collectList()
            .block(TIMEOUT.multipliedBy(requests));
        final long elapsed = System.nanoTime() - start;
        return new Result(info.getName() + ": " + info.getDescription(), bestRows,
            (long)requests * ROWS * COLUMNS * Float.BYTES, elapsed);
    }

    /**
     * @param args optional URI and number of requests (default 16).
     */
    public static void main(final String[] args)
    {
        final String uri = Uris.uriFrom(args, InferenceServer.DEFAULT_URI);
        final int requests = args.length > 1 ? Integer.parseInt(args[1]) : 16;
        try (RpcChannel channel = RpcChannel.builder(uri).build())
        {
            final Result result = run(channel, requests);
            System.out.println("model " + result.model());
            System.out.println("best rows " + result.bestRows());
            System.out.printf(Locale.ROOT, "%d requests of %d MiB in %.1f ms: %.0f MiB/s%n",
                requests, ROWS * COLUMNS * Float.BYTES / (1024 * 1024), result.elapsedNanos() / 1e6,
                result.megabytesPerSecond());
        }
    }
}
