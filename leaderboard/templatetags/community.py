"""Small self-contained blocks of the community features, for pages whose views are not theirs:
`{% best_public_kernel task %}` (task page), `{% public_kernels_link run %}` (run page) and
`{% method_history method %}` (method page)."""

from django import template

from leaderboard.submissions import history, public_kernels

register = template.Library()


@register.inclusion_tag("leaderboard/partials/_best_public_kernel.html")
def best_public_kernel(task):
    return {"best": public_kernels.best_public_kernel(task)}


@register.inclusion_tag("submissions/_public_kernels_link.html")
def public_kernels_link(run):
    return {"run": run, "public": public_kernels.public_runs().filter(pk=run.pk).exists()}


@register.inclusion_tag("leaderboard/partials/_method_history.html", takes_context=True)
def method_history(context, method):
    return {"rows": history.method_history(method, context["request"].user)}
