// Starts DynamoDB Local bound to 127.0.0.1 only. The jar's own ServerRunner binds every interface
// (Jetty's Server(port)); here its connector is given the loopback host before it starts. Run in
// Java's single-file source mode, with the jar and its libraries on the class path; takes the
// jar's own options, and prints "listening on 127.0.0.1:<port>". The jar refuses -port 0, so the
// requested port (0: any free one) is set on the connector instead of passed to the jar.
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    int port = 0;
    java.util.List<String> rest = new java.util.ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("-port") && i + 1 < args.length) port = Integer.parseInt(args[++i]);
      else rest.add(args[i]);
    }
    rest.add("-port");
    rest.add("8000");
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(rest.toArray(new String[0]));
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector c : server.getConnectors()) {
      ((ServerConnector) c).setHost("127.0.0.1");
      ((ServerConnector) c).setPort(port);
    }
    proxy.start();
    ServerConnector connector = (ServerConnector) server.getConnectors()[0];
    System.out.println("listening on " + connector.getHost() + ":" + connector.getLocalPort());
    System.out.flush();
    proxy.join();
  }
}
