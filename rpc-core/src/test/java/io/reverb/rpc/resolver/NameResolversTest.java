package io.reverb.rpc.resolver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.reverb.rpc.Status;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class NameResolversTest
{
    private final NameResolver.Args args = NameResolver.Args.defaults();

    @Test
    void shouldFindTheDnsResolverByScheme()
    {
        final NameResolver resolver = NameResolvers.newNameResolver("dns:///localhost:7000?transport=tcp", args);
        assertThat(resolver).isInstanceOf(DnsNameResolver.class);
        assertThat(((DnsNameResolver)resolver).port()).isEqualTo(7000);
    }

    @Test
    void shouldTreatATransportAddressAsAListOfOne()
    {
        final NameResolver resolver = NameResolvers.newNameResolver("shm://greeter", args);
        assertThat(resolve(resolver)).containsExactly(URI.create("shm://greeter"));
    }

    @Test
    void shouldParseAStaticListOfMixedSchemes()
    {
        final NameResolver resolver = NameResolvers.newNameResolver("static:shm://a,tcp://10.0.0.1:7000,inproc://c", args);
        assertThat(resolve(resolver)).map(URI::toString).containsExactly("shm://a", "tcp://10.0.0.1:7000", "inproc://c");
        assertThat(resolve(NameResolvers.forAddresses(List.of("shm://a", "tcp://h:1")))).hasSize(2);
    }

    @Test
    void shouldRejectAnAddressWithoutScheme()
    {
        assertThatThrownBy(() -> NameResolvers.newNameResolver("static:shm://a,greeter", args))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("greeter").hasMessageContaining("no scheme");
        assertThatThrownBy(() -> NameResolvers.forAddresses(List.of()))
            .isInstanceOf(IllegalArgumentException.class);
    }

    private static List<URI> resolve(final NameResolver resolver)
    {
        final List<URI> out = new ArrayList<>();
        resolver.start(new NameResolver.Listener()
        {
            @Override
            public void onAddresses(final List<URI> addresses)
            {
                out.addAll(addresses);
            }

            @Override
            public void onError(final Status error)
            {
                throw new AssertionError(error.toString());
            }
        });
        return out;
    }
}
