// When the server's JVM started, as text, and the start `tog warm` last
// followed (the setting $key, JSON): a question asked after a later start is
// told that its first questions pay the server's cold start
// (engine/backends/neo4j/warmth.py). (SHOW DATABASES's lastStartTime would
// not do: it stays at the database's creation when the server restarts.)
CALL dbms.queryJmx('java.lang:type=Runtime') YIELD attributes
OPTIONAL MATCH (s:TogSetting {key: $key})
RETURN toString(datetime({epochMillis: attributes.StartTime.value})) AS started, s.value AS warmed
