package io.reverb.examples.inference;

import com.google.protobuf.UnsafeByteOperations;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/**
 * Dense float32 matrices in {@link Tensor} messages: row-major, little-endian, no copies beyond the one
 * that builds the bytes.
 */
public final class Tensors
{
    private Tensors()
    {
    }

    /**
     * @param rows    number of rows.
     * @param columns number of columns.
     * @param values  value at (row, column).
     * @return a FLOAT32 tensor of shape [rows, columns].
     */
    public static Tensor matrix(final int rows, final int columns, final FloatMatrixFunction values)
    {
        final ByteBuffer bytes = ByteBuffer.allocate(Math.multiplyExact(Math.multiplyExact(rows, columns), Float.BYTES))
            .order(ByteOrder.LITTLE_ENDIAN);
        for (int row = 0; row < rows; row++)
        {
            for (int column = 0; column < columns; column++)
            {
                bytes.putFloat(values.value(row, column));
            }
        }
        return Tensor.newBuilder()
            .setDtype(DataType.FLOAT32)
            .addShape(rows)
            .addShape(columns)
            // The array is never touched again: wrapping it saves a 4 MiB copy.
            .setData(UnsafeByteOperations.unsafeWrap(bytes.array()))
            .build();
    }

    /**
     * @param values the values.
     * @return a FLOAT32 tensor of shape [values.length].
     */
    public static Tensor vector(final float[] values)
    {
        final ByteBuffer bytes = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(values);
        return Tensor.newBuilder()
            .setDtype(DataType.FLOAT32)
            .addShape(values.length)
            .setData(UnsafeByteOperations.unsafeWrap(bytes.array()))
            .build();
    }

    /**
     * @param tensor a FLOAT32 tensor.
     * @return a read-only view of its values.
     * @throws IllegalArgumentException if the type or the size does not match the shape.
     */
    public static FloatBuffer floats(final Tensor tensor)
    {
        if (tensor.getDtype() != DataType.FLOAT32)
        {
            throw new IllegalArgumentException("expected FLOAT32, got " + tensor.getDtype());
        }
        long elements = 1;
        for (final long dimension : tensor.getShapeList())
        {
            elements *= dimension;
        }
        if (elements * Float.BYTES != tensor.getData().size())
        {
            throw new IllegalArgumentException("shape " + tensor.getShapeList() + " needs " + elements * Float.BYTES +
                " bytes, data has " + tensor.getData().size());
        }
        return tensor.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
    }

    /**
     * The value of a matrix at (row, column).
     */
    @FunctionalInterface
    public interface FloatMatrixFunction
    {
        /**
         * @param row    the row.
         * @param column the column.
         * @return the value.
         */
        float value(int row, int column);
    }
}
