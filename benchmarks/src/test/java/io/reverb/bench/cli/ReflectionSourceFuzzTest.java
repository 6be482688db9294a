package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.Descriptors.GenericDescriptor;
import com.google.protobuf.Descriptors.MethodDescriptor;
import com.google.protobuf.Descriptors.ServiceDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import io.reverb.services.reflection.ErrorResponse;
import io.reverb.services.reflection.ServerReflectionRequest;
import io.reverb.services.reflection.ServerReflectionResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Fuzz target for reverb-cli's descriptor handling (issue 38): whatever a reflection service answers, the
 * {@code list}/{@code describe}/{@code call} path ({@link ReflectionSource}, {@link FileBuilder}, {@link Symbols},
 * {@link Describer}, {@link DynamicMethod}) ends with an answer or a {@link CliException}, never another exception or
 * a stack overflow, and nothing it prints holds a character a terminal would act on.
 *
 * <p>The input is the server's answers, each a 2-byte big-endian length and a {@code ServerReflectionResponse};
 * request {@code i} gets answer {@code i} (the last one again when they run out). No transport: the answers go
 * straight to the source, so regression mode is fast. See FUZZING.md to fuzz it for minutes.
 */
class ReflectionSourceFuzzTest
{
    /** Services looked at per input, so that one input cannot run for long. */
    private static final int MAX_SERVICES = 8;

    @FuzzTest
    void describesAnyReflectionAnswers(final byte[] input)
    {
        final ReflectionSource source = new ReflectionSource(new Answers(input), "fuzz://server", Duration.ofSeconds(1));
        try
        {
            final List<String> services = source.listServices();
            for (final String service : services.subList(0, Math.min(services.size(), MAX_SERVICES)))
            {
                assertPrintable(Printable.name(service));
                look(source, service);
            }
        }
        catch (final CliException refused)
        {
            assertThat(refused.exitCode()).isIn(CliException.CALL_FAILED, CliException.USAGE, CliException.NO_CONNECTION);
            assertThat(refused.getMessage()).startsWith("ERROR: ");
            assertPrintable(Printable.text(refused.getMessage()));
        }
    }

    private static void look(final ReflectionSource source, final String service)
    {
        final FileDescriptor file = source.fileContaining(service);
        final GenericDescriptor symbol = Symbols.find(file, service);
        if (symbol == null)
        {
            return;
        }
        assertPrintable(Printable.text(Describer.describe(symbol)));
        if (symbol instanceof ServiceDescriptor)
        {
            for (final MethodDescriptor method : ((ServiceDescriptor)symbol).getMethods())
            {
                final DynamicMethod dynamic = DynamicMethod.resolve(source, method.getFullName());
                final DynamicMessage request = DynamicMessage.getDefaultInstance(method.getInputType());
                try
                {
                    assertPrintable(Printable.text(dynamic.toJson(request)));
                    dynamic.parseRequest("{}");
                }
                catch (final InvalidProtocolBufferException expected)
                {
                    // a type JSON cannot print: reverb-cli reports it as a CliException
                }
            }
        }
    }

    private static void assertPrintable(final String printed)
    {
        for (int i = 0; i < printed.length(); i++)
        {
            final char c = printed.charAt(i);
            assertThat(Printable.unsafe(c) && c != '\n' && c != '\t').as("character %d of %s", (int)c, printed)
                .isFalse();
        }
    }

    /** A reflection service that answers from the fuzzer's input. */
    private static final class Answers implements CliTarget
    {
        private final List<ServerReflectionResponse> answers = new ArrayList<>();
        private int next;

        Answers(final byte[] input)
        {
            final ByteBuffer buffer = ByteBuffer.wrap(input);
            while (buffer.remaining() >= 2)
            {
                final int length = Math.min(buffer.getShort() & 0xffff, buffer.remaining());
                final byte[] bytes = new byte[length];
                buffer.get(bytes);
                try
                {
                    answers.add(ServerReflectionResponse.parseFrom(bytes));
                }
                catch (final InvalidProtocolBufferException ex)
                {
                    // a transport would have refused it: the call fails
                    answers.add(null);
                }
            }
        }

        @Override
        public List<ServerReflectionResponse> reflect(final ServerReflectionRequest request, final Duration deadline)
            throws CallFailure
        {
            if (answers.isEmpty())
            {
                return List.of(ServerReflectionResponse.newBuilder().setErrorResponse(ErrorResponse.newBuilder()
                    .setErrorCode(5).setErrorMessage("nothing")).build());
            }
            final ServerReflectionResponse answer = answers.get(Math.min(next++, answers.size() - 1));
            if (answer == null)
            {
                throw new CallFailure("INTERNAL", "unparsable response", null);
            }
            return List.of(answer);
        }

        @Override
        public void call(final DynamicMethod method, final DynamicMessage request, final List<String[]> headers,
            final Duration deadline, final Consumer<DynamicMessage> responses)
        {
            throw new UnsupportedOperationException("reflection only");
        }

        @Override
        public void close()
        {
        }
    }
}
