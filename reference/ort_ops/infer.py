"""`infer`: one forward pass on the synthesized inputs."""


def prepare(ctx):
    names = [o.name for o in ctx.session.get_outputs()]

    def call():
        return ctx.session.run(None, ctx.feeds)

    return call, names
