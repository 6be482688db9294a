package io.reverb.examples.inference;

import com.google.protobuf.Empty;
import io.reverb.rpc.Status;
import reactor.core.publisher.Mono;

import java.nio.FloatBuffer;

/**
 * A stand-in model: scores each row of a [rows, columns] FLOAT32 input by its mean, and reports the best
 * row. What matters here is the transport moving 4 MiB inputs, not the arithmetic.
 */
public final class InferenceService extends InferenceServiceRpc.InferenceServiceImplBase
{
    /** The one model served. */
    public static final String MODEL = "row-mean-v1";

    @Override
    public Mono<InferResponse> infer(final InferRequest request)
    {
        return Mono.fromCallable(() ->
        {
            if (!request.getModel().isEmpty() && !MODEL.equals(request.getModel()))
            {
                throw Status.NOT_FOUND.withDescription("no model named " + request.getModel()).asException();
            }
            final Tensor input = request.getInput();
            if (input.getShapeCount() != 2)
            {
                throw Status.INVALID_ARGUMENT.withDescription("input must be [rows, columns], got " + input.getShapeList())
                    .asException();
            }
            final FloatBuffer values;
            try
            {
                values = Tensors.floats(input);
            }
            catch (final IllegalArgumentException ex)
            {
                throw Status.INVALID_ARGUMENT.withDescription(ex.getMessage()).asException();
            }
            final int rows = (int)input.getShape(0);
            final int columns = (int)input.getShape(1);
            final float[] scores = new float[rows];
            int bestRow = 0;
            for (int row = 0; row < rows; row++)
            {
                double sum = 0;
                for (int column = 0, offset = row * columns; column < columns; column++)
                {
                    sum += values.get(offset + column);
                }
                scores[row] = (float)(sum / columns);
                if (scores[row] > scores[bestRow])
                {
                    bestRow = row;
                }
            }
            return InferResponse.newBuilder()
                .setModel(MODEL)
                .setScores(Tensors.vector(scores))
                .setBestRow(bestRow)
                .build();
        });
    }

    @Override
    public Mono<ModelInfo> describe(final Empty request)
    {
        return Mono.just(ModelInfo.newBuilder()
            .setName(MODEL)
            .setDescription("scores each row of a [rows, columns] FLOAT32 tensor by its mean")
            .build());
    }
}
