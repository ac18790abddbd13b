"""The address of the client whose request is being handled, as Kafka shows it ("/127.0.0.1").

Each connection's task sets it once (server.py); handlers that report it (DescribeGroups'
client_host, through JoinGroup) read it. A context variable, because asyncio copies it into
exactly the task that serves that connection.
"""

from contextvars import ContextVar

client_host: ContextVar[str] = ContextVar("client_host", default="")
