package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bundled native half: extracted privately, loaded by Reverb's {@code NativeDispatcher} (in a class loader of
 * its own: the test class path has the emulated device's shadow under that name), and its JNI functions answer
 * without an RDMA device: versions and sizes, argument checks, errors as IOException or return codes.
 */
class NativeLibraryTest
{
    private static final Object LOADED = new Object();
    private static Object dispatcher;
    private static Throwable loadFailure;

    @TempDir
    Path root;

    @Test
    void shouldExtractToAPrivateDirectoryAndDeleteOnceLoaded() throws Exception
    {
        final Path library = NativeDispatcherContractTest.bundledLibrary();

        final Path copy = NativeLibrary.extract(NativeLibrary.bundledResource(), root.resolve("tmp"));

        assertThat(copy.getFileName().toString()).isEqualTo(NativeLibrary.BUNDLED_NAME);
        assertThat(copy.getParent().getFileName().toString()).startsWith(NativeLibrary.EXTRACT_PREFIX);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(copy.getParent()))).isEqualTo("rwx------");
        assertThat(Files.readAllBytes(copy)).isEqualTo(Files.readAllBytes(library));
        NativeLibrary.loaded(copy.toString());
        assertThat(copy.getParent()).doesNotExist();
    }

    @Test
    void shouldNeverDeleteAUsersLibdisni() throws IOException
    {
        final Path users = Files.createFile(Files.createDirectories(root.resolve("lib")).resolve("libdisni.so"));

        NativeLibrary.loaded(users.toString());

        assertThat(users).exists();
    }

    @Test
    void shouldNameWhatIsMissingWithoutAnyNativeHalf()
    {
        assertThat(NativeLibrary.noLibraryCause("/opt/x"))
            .contains("libdisni.so is not on java.library.path [/opt/x]")
            .contains(NativeLibrary.platform() == null ? "linux-x86_64" : NativeLibrary.bundledResourceName());
    }

    @Test
    void shouldLoadTheBundledLibraryAndCheckItsJniVersion() throws Exception
    {
        final Object loaded = loadOrSkip();

        assertThat(call(loaded, "_getVersion")).isEqualTo(DisniAvailability.DISNI_JNI_VERSION);
        // rdma-core's x86-64/aarch64 layout, as the emulated device's VerbsLayout has it.
        assertThat(call(loaded, "_getSockAddrInSize")).isEqualTo(16);
        assertThat(call(loaded, "_getIbvSendWRSize")).isEqualTo(128);
        assertThat(call(loaded, "_getIbvRecvWRSize")).isEqualTo(32);
        assertThat(call(loaded, "_getIbvSgeSize")).isEqualTo(16);
        assertThat(call(loaded, "_getIbvWCSize")).isEqualTo(48);
        assertThat(call(loaded, "_getRemoteAddressOffset")).isEqualTo(40);
        assertThat(call(loaded, "_getRKeyOffset")).isEqualTo(48);
    }

    @Test
    void shouldRefuseNullHandlesAndNegativeLengthsBeforeTouchingMemory() throws Exception
    {
        final Object loaded = loadOrSkip();

        // Declared to throw IOException: they throw it, naming the argument.
        assertThatThrownBy(() -> call(loaded, "_bindAddr", 0L, 0L)).isInstanceOf(IOException.class)
            .hasMessageContaining("j2c::bind: cm id is null");
        assertThatThrownBy(() -> call(loaded, "_pollCQ", 0L, 4, 0L)).isInstanceOf(IOException.class)
            .hasMessageContaining("cq is null");
        assertThatThrownBy(() -> call(loaded, "_regMr", 1L, 1L, -1, 0, 1L, 1L, 1L)).isInstanceOf(IOException.class)
            .hasMessageContaining("negative length");
        assertThatThrownBy(() -> call(loaded, "_connect", 0L, 7, 7, 0L, (byte)0)).isInstanceOf(IOException.class)
            .hasMessageContaining("cm id is null");
        assertThatThrownBy(() -> call(loaded, "_postSend", 0L, 0L)).isInstanceOf(IOException.class)
            .hasMessageContaining("j2c::post_send: qp is null");
        assertThatThrownBy(() -> call(loaded, "_modifyQP", 0L, 0L)).isInstanceOf(IOException.class);
        // Returning a code: a negative one (-EINVAL), or -1 for "no event".
        assertThat(call(loaded, "_destroyCmId", 0L)).isEqualTo(-22);
        assertThat(call(loaded, "_destroyQP", 0L)).isEqualTo(-22);
        assertThat(call(loaded, "_ackCqEvent", 0L, 1)).isEqualTo(-22);
        assertThat(call(loaded, "_getCmEvent", 0L, 0L, 0L, 0)).isEqualTo(-1);
        assertThatThrownBy(() -> call(loaded, "_getContext", 0L)).isInstanceOf(IOException.class)
            .hasMessageContaining("j2c::getContext: cm id is null");
    }

    @Test
    void shouldReportRdmaCmErrorsAsIoExceptionsWithTheirErrno() throws Exception
    {
        final Object loaded = loadOrSkip();
        Assumptions.assumeFalse(Files.exists(DisniAvailability.RDMA_CM_DEVICE), "this host has rdma_cm: it would open");

        assertThatThrownBy(() -> call(loaded, "_createEventChannel")).isInstanceOf(IOException.class)
            .hasMessageContaining("j2c::createEventChannel: rdma_create_event_channel failed: ");
    }

    /**
     * Loads Reverb's NativeDispatcher (and so the native half) once for this class. Where rdma-core's runtime
     * libraries are missing, loading must fail naming them, and the tests that need the library are skipped.
     */
    private static Object loadOrSkip() throws Exception
    {
        NativeDispatcherContractTest.bundledLibrary();
        synchronized (LOADED)
        {
            if (dispatcher == null && loadFailure == null)
            {
                try
                {
                    final Class<?> type = MainDispatcherClass.define(NativeLibrary.class, true);
                    final Constructor<?> constructor = type.getDeclaredConstructor();
                    constructor.setAccessible(true);
                    dispatcher = constructor.newInstance();
                }
                catch (final UnsatisfiedLinkError ex)
                {
                    loadFailure = ex;
                }
            }
        }
        if (loadFailure != null)
        {
            final String message = String.valueOf(loadFailure.getMessage());
            Assumptions.assumeFalse(message.contains("already loaded in another classloader"),
                "another test of this JVM loaded the native half first");
            final boolean runtimeMissing = !Files.exists(Paths.get("/usr/lib/x86_64-linux-gnu/libibverbs.so.1")) &&
                !Files.exists(Paths.get("/usr/lib/aarch64-linux-gnu/libibverbs.so.1")) &&
                !Files.exists(Paths.get("/usr/lib64/libibverbs.so.1"));
            assertThat(runtimeMissing).as("loading failed although libibverbs.so.1 is installed: " + loadFailure).isTrue();
            assertThat(message).containsAnyOf("libibverbs.so.1", "librdmacm.so.1");
            Assumptions.abort("rdma-core's runtime libraries are not installed: " + message);
        }
        return dispatcher;
    }

    private static Object call(final Object target, final String name, final Object... args) throws Exception
    {
        for (final Method method : target.getClass().getDeclaredMethods())
        {
            if (method.getName().equals(name))
            {
                try
                {
                    return method.invoke(target, args);
                }
                catch (final InvocationTargetException ex)
                {
                    if (ex.getCause() instanceof Exception)
                    {
                        throw (Exception)ex.getCause();
                    }
                    throw ex;
                }
            }
        }
        throw new NoSuchMethodException(name);
    }
}
