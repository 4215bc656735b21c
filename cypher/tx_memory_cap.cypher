// The server's cap on the memory of one transaction ("0B": none), for the
// size of a load's transactions. A server that does not let us read its
// settings gets the default size.
SHOW SETTINGS YIELD name, value
WHERE name = 'db.memory.transaction.max'
RETURN value
