package io.reverb.rpc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.reverb.rpc.Marshaller;
import io.reverb.rpc.MethodDescriptor;
import io.reverb.rpc.ServiceDefinition;
import io.reverb.rpc.protobuf.ProtoMarshaller;
import io.reverb.rpc.stub.ServerCalls;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

/**
 * The method lookup of CALL frames reads names eight bytes at a time: every length (under, at and around multiples
 * of eight), both byte orders, any offset, and names that differ from a registered one in a single byte anywhere, or
 * only in length, are told apart.
 */
class MethodRegistryTest
{
    private static final Marshaller<StringValue> MARSHALLER = ProtoMarshaller.of(StringValue.getDefaultInstance());

    private static String name(final int length, final char fill)
    {
        final StringBuilder name = new StringBuilder("s/");
        while (name.length() < length)
        {
            name.append((char)(fill + name.length() % 7));
        }
        return name.substring(0, length);
    }

    private static ServiceDefinition.ServerMethodDefinition<?, ?> definition(final String fullName)
    {
        final MethodDescriptor<StringValue, StringValue> method = MethodDescriptor.<StringValue, StringValue>newBuilder()
            .type(MethodDescriptor.MethodType.UNARY).fullMethodName(fullName)
            .requestMarshaller(MARSHALLER).responseMarshaller(MARSHALLER).build();
        return ServiceDefinition.builder(fullName.substring(0, fullName.indexOf('/')))
            .addMethod(method, ServerCalls.unary(Mono::just)).build().methods().iterator().next();
    }

    private static ByteBuffer frame(final byte[] name, final int offset, final ByteOrder order)
    {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(offset + name.length + 3).order(order);
        for (int i = 0; i < buffer.capacity(); i++)
        {
            buffer.put(i, (byte)0x5A); // bytes around the name must not count
        }
        buffer.put(offset, name);
        return buffer;
    }

    @Test
    void shouldFindEveryNameByItsBytesAndNoNameThatDiffersInOneByteOrInLength()
    {
        final List<ServiceDefinition.ServerMethodDefinition<?, ?>> definitions = new ArrayList<>();
        for (int length = 3; length <= 41; length++)
        {
            definitions.add(definition(name(length, 'a')));
        }
        final MethodRegistry<ServiceDefinition.ServerMethodDefinition<?, ?>> registry = MethodRegistry.of(definitions);
        int lookups = 0;
        for (final ServiceDefinition.ServerMethodDefinition<?, ?> definition : definitions)
        {
            final byte[] name = definition.method().fullMethodName().getBytes(StandardCharsets.US_ASCII);
            for (final ByteOrder order : new ByteOrder[] {ByteOrder.LITTLE_ENDIAN, ByteOrder.BIG_ENDIAN})
            {
                for (final int offset : new int[] {0, 1, 5, 8})
                {
                    assertThat(registry.find(frame(name, offset, order), offset, name.length))
                        .as("%s at %d, %s", definition.method().fullMethodName(), offset, order).isSameAs(definition);
                    lookups++;
                    for (int i = 2; i < name.length; i++)
                    {
                        final byte[] other = name.clone();
                        other[i] = (byte)'Z';
                        assertThat(registry.find(frame(other, offset, order), offset, other.length))
                            .as("%s with byte %d changed", definition.method().fullMethodName(), i).isNull();
                        lookups++;
                    }
                    // a prefix of a registered name that is not itself registered, and the name one byte longer
                    final byte[] longer = (new String(name, StandardCharsets.US_ASCII) + "q")
                        .getBytes(StandardCharsets.US_ASCII);
                    assertThat(registry.find(frame(longer, offset, order), offset, longer.length)).isNull();
                    lookups++;
                }
            }
        }
        assertThat(lookups).isGreaterThan(5_000);
    }
}
