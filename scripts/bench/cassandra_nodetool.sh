#!/usr/bin/env bash
# nodetool for the Cassandra that ../../../shared/cassandra/start.sh runs (NAME=bench by default),
# from the same Maven Central jars; JMX listens on 127.0.0.1:7199 whatever ADDR is (CASS_JMX_PORT
# for another port: cluster.sh gives node cN the port 7200 + N).
NAME="${CASS_NAME:-bench}"
exec /usr/lib/jvm/java-17-openjdk-amd64/bin/java -Xmx256m -cp "/tmp/cass-lab/$NAME/conf:/tmp/cass-lab/lib/*" \
  --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.base/java.io=ALL-UNNAMED \
  --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED \
  --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED \
  -Dcassandra.config=file:///tmp/cass-lab/$NAME/conf/cassandra.yaml -Dlogback.configurationFile=/dev/null \
  -Dcassandra.logdir=/tmp \
  org.apache.cassandra.tools.NodeTool -h 127.0.0.1 -p "${CASS_JMX_PORT:-7199}" "$@"
