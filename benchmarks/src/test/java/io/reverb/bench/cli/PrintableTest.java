package io.reverb.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * {@link Printable}: what a terminal would act on comes out as {@code \}{@code uXXXX}; the rest as it is.
 */
class PrintableTest
{
    @Test
    void shouldEscapeControlCharactersC1AndBidiOverrides()
    {
        assertThat(Printable.name("a\u001b[31mb\u009b2Jc\u202edcba\u2066x\u007f"))
            .isEqualTo("a\\u001b[31mb\\u009b2Jc\\u202edcba\\u2066x\\u007f");
        assertThat(Printable.name("line\nforged\r\t")).isEqualTo("line\\u000aforged\\u000d\\u0009");
    }

    @Test
    void shouldKeepLayoutInTextAndPlainTextAsItIs()
    {
        assertThat(Printable.text("{\n\t\"k\u001b\": \"v\"\n}")).isEqualTo("{\n\t\"k\\u001b\": \"v\"\n}");
        final String plain = "reverb.bench.clitest.Shop — Grüße, 日本";
        assertThat(Printable.text(plain)).isSameAs(plain);
        assertThat(Printable.name(null)).isEqualTo("null");
    }
}
