"""One module per Kafka API, each exposing `async def handle(ctx, header, request)`; the table of
which answers what is broker/api/routes.py."""
