package io.reverb.rpc.testing;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The guard is installed for every test class (this one included) and counts what reaches stdout/stderr. */
class LogVolumeGuardTest
{
    @Test
    void shouldFailAClassThatWritesMoreLinesThanTheLimit()
    {
        LogVolumeGuard.checkAndReset("before", Long.MAX_VALUE);
        for (int i = 0; i < 3; i++)
        {
            System.err.println("LogVolumeGuardTest line " + i);
        }
        assertThatThrownBy(() -> LogVolumeGuard.checkAndReset("a flooding class", 2))
            .isInstanceOf(AssertionError.class)
            .hasMessageContaining("wrote 3 lines");
    }
}
