package io.hotkv.client;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Starts one hotkv-server for the whole test run (shared by every test class through JUnit's
 * root store, which closes it, killing the process, when the run ends) and injects it as a
 * {@link TestServer} parameter.
 */
public final class HotKVServerExtension implements BeforeAllCallback, ParameterResolver {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(HotKVServerExtension.class);

  static TestServer server(ExtensionContext context) {
    return context
        .getRoot()
        .getStore(NS)
        .computeIfAbsent(
            TestServer.class,
            k -> {
              try {
                return TestServer.start();
              } catch (Exception e) {
                throw new IllegalStateException("starting hotkv-server: " + e.getMessage(), e);
              }
            },
            TestServer.class);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    server(context);
  }

  @Override
  public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
    return p.getParameter().getType() == TestServer.class;
  }

  @Override
  public Object resolveParameter(ParameterContext p, ExtensionContext e) {
    return server(e);
  }
}
