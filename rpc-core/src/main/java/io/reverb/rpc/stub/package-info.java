/**
 * What generated code calls: {@link io.reverb.rpc.stub.AbstractReactorStub}, {@link io.reverb.rpc.stub.ClientCalls}
 * and {@link io.reverb.rpc.stub.ServerCalls}.
 */
package io.reverb.rpc.stub;
