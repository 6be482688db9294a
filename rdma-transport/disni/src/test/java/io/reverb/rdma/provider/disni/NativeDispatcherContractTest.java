package io.reverb.rdma.provider.disni;

import static org.assertj.core.api.Assertions.assertThat;

import io.reverb.rdma.provider.disni.nativelib.NativeLibrary;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * One contract, three parties: DiSNi 2.1's {@code NativeDispatcher} (its Java half calls these members), Reverb's
 * replacement in the main classes, and the native half built from {@code src/main/c}, whose JNI exports must be
 * exactly one per native method DiSNi declares.
 */
class NativeDispatcherContractTest
{
    private static final String JNI_PREFIX = "Java_com_ibm_disni_verbs_impl_NativeDispatcher_";

    @Test
    void shouldDeclareExactlyDisnisNativeMethods()
    {
        final Map<String, String> disni = natives(MainDispatcherClass.disnis());
        final Map<String, String> reverb = natives(MainDispatcherClass.reverbs());

        assertThat(disni).as("DiSNi 2.1 declares 48 native methods").hasSize(48);
        assertThat(reverb).isEqualTo(disni);
    }

    @Test
    void shouldKeepDisnisOtherMembers()
    {
        final Class<?> disni = MainDispatcherClass.disnis();
        final Class<?> reverb = MainDispatcherClass.reverbs();

        assertThat(fields(reverb)).isEqualTo(fields(disni));
        assertThat(constructors(reverb)).isEqualTo(constructors(disni));
        assertThat(reverb.getModifiers()).isEqualTo(disni.getModifiers());
        assertThat(reverb.getSuperclass()).isEqualTo(disni.getSuperclass());
        final Function<Class<?>, List<String>> others = type -> Arrays.stream(type.getDeclaredMethods())
            .filter(m -> !Modifier.isNative(m.getModifiers()) && !m.isSynthetic()).map(Method::toGenericString).toList();
        assertThat(others.apply(reverb)).isEqualTo(others.apply(disni)).isEmpty();
    }

    @Test
    void shouldExportOneJniFunctionPerDeclaredNativeMethodAndNothingElse() throws Exception
    {
        final Path library = bundledLibrary();
        final List<String> exported = ElfSymbols.exported(library);
        final List<String> jni = exported.stream().filter(name -> name.startsWith("Java_")).sorted().toList();
        final List<String> expected = natives(MainDispatcherClass.disnis()).keySet().stream()
            .map(name -> JNI_PREFIX + mangle(name)).sorted().toList();

        assertThat(jni).as("JNI exports of " + library).isEqualTo(expected);
        assertThat(new TreeSet<>(jni)).hasSameSizeAs(jni);
        assertThat(exported).as("nothing but the JNI functions is exported (-fvisibility=hidden)")
            .allMatch(name -> name.startsWith(JNI_PREFIX));
    }

    /** The library the build put into target/classes (the jar's META-INF/native). */
    static Path bundledLibrary() throws URISyntaxException
    {
        Assumptions.assumeFalse(Boolean.getBoolean("reverb.native.skip"), "built with -Dreverb.native.skip=true");
        Assumptions.assumeTrue(NativeLibrary.platform() != null,
            "the native half is built for Linux x86_64/aarch64 only, not " + System.getProperty("os.name") + '/' +
                System.getProperty("os.arch"));
        final URL resource = NativeLibrary.bundledResource();
        assertThat(resource).as(NativeLibrary.bundledResourceName() + " (built by src/main/c/build.sh)").isNotNull();
        return Paths.get(resource.toURI());
    }

    /** JNI's short name mangling: '_' becomes "_1"; DiSNi's names are otherwise plain ASCII letters. */
    static String mangle(final String name)
    {
        assertThat(name).matches("[A-Za-z0-9_]+");
        return name.replace("_", "_1");
    }

    private static Map<String, String> natives(final Class<?> type)
    {
        final Map<String, String> natives = new TreeMap<>();
        for (final Method method : type.getDeclaredMethods())
        {
            if (Modifier.isNative(method.getModifiers()))
            {
                assertThat(natives.put(method.getName(), method.toGenericString())).as("overloaded " + method).isNull();
            }
        }
        return natives;
    }

    private static List<String> fields(final Class<?> type)
    {
        return Arrays.stream(type.getDeclaredFields()).filter(f -> !f.isSynthetic())
            .map(f -> Modifier.toString(f.getModifiers()) + ' ' + f.getType().getName() + ' ' + f.getName()).sorted()
            .collect(Collectors.toList());
    }

    private static List<String> constructors(final Class<?> type)
    {
        return Arrays.stream(type.getDeclaredConstructors()).map(Constructor::toGenericString).sorted().toList();
    }
}
