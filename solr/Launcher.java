// mrcrawl's standalone Solr: Jetty + Solr's dispatch filter, started in code by the test
// framework's JettySolrRunner (so no webapp folder is needed), on 127.0.0.1 only.
//
//   java -cp CLASSES:JARS/* Launcher [PORT [SOLR_HOME]]     (solr/up.sh does this)
//
// Runs until killed: TERM stops Jetty and closes the cores (committing pending updates).

import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.solr.embedded.JettyConfig;
import org.apache.solr.embedded.JettySolrRunner;

public final class Launcher {
  public static void main(String[] args) throws Exception {
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 8983;
    String home = Path.of(args.length > 1 ? args[1] : "solr-home").toAbsolutePath().toString();

    JettyConfig config =
        JettyConfig.builder()
            .setPort(port) // JettySolrRunner binds its connector to 127.0.0.1 itself
            .setContext("/solr")
            // our own hook below stops Solr; Jetty's would race it
            .stopAtShutdown(false)
            // fail at once on a busy port: up.sh checks the port before starting us
            .withPortRetryTime(0)
            .build();
    JettySolrRunner solr = new JettySolrRunner(home, new Properties(), config);

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  try {
                    solr.stop();
                  } catch (Exception e) {
                    e.printStackTrace();
                  } finally {
                    stopped.countDown();
                  }
                },
                "mrcrawl-solr-stop"));

    try {
      solr.start();
    } catch (Exception e) {
      System.err.println("mrcrawl solr: could not start on 127.0.0.1:" + port + ": " + e);
      e.printStackTrace();
      System.exit(1);
    }
    System.err.println("mrcrawl solr: listening on http://127.0.0.1:" + solr.getLocalPort()
        + "/solr (home " + home + ")");
    stopped.await();
  }
}
