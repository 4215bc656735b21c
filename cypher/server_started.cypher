// When the server's JVM started, as text: `tog warm` keeps the start it
// warmed, and a question asked after a later one is told that its first
// questions pay the server's cold start (engine/backends/neo4j/warmth.py).
// (SHOW DATABASES's lastStartTime would not do: it stays at the database's
// creation when the server restarts.)
CALL dbms.queryJmx('java.lang:type=Runtime') YIELD attributes
RETURN toString(datetime({epochMillis: attributes.StartTime.value})) AS started
