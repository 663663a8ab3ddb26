"""The users' journeys: home cards filled, friendly 404, the methods index and its search, the glossary,
entry pages (sane percentages, no repeated facts, how each number was measured), admin hardware column."""

import pytest
from django.test import Client

from leaderboard.models import Aggregation, Entry
from tests.leaderboard import factories

pytestmark = pytest.mark.django_db


def html(client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, url
    return response.content.decode()


def test_home_cards_show_the_value_of_each_top_row(client, seeded):
    page = html(client, "/")
    cards = page.split('class="level-card"')[1:]
    level_2 = cards[1]
    assert "daVinci-kernel-14B" in level_2
    assert 'data-value="70.6"' in level_2
    assert '<td class="num"></td>' not in page


def test_an_unknown_url_gets_the_friendly_404_page(settings, seeded):
    settings.DEBUG = False
    response = Client().get("/no/such/page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert 'data-testid="not-found"' in body
    assert "/glossary/" in body
    assert "/methods/" in body


def test_the_500_page_needs_no_context():
    from django.template.loader import get_template

    assert "Something went wrong" in get_template("500.html").render({})


def test_the_methods_index_lists_and_searches_methods(client, seeded):
    everything = html(client, "/methods/")
    assert "daVinci-kernel-14B" in everything
    assert "AI CUDA Engineer" in everything
    found = html(client, "/methods/?q=davinci")
    assert "daVinci-kernel-14B" in found
    assert "AI CUDA Engineer" not in found
    assert "No method matches" in html(client, "/methods/?q=zzzz-nothing")


def test_the_glossary_defines_every_metric_and_convention(client, seeded):
    page = html(client, "/glossary/")
    for anchor in ("fast_p", "threshold", "denominator", "baseline", "geomean", "correct_rate", "lanes"):
        assert f'id="{anchor}"' in page
    assert 'id="provenance"' in page
    assert "≥" in page
    for metric_id in ("fast_1", "speedup_geomean", "speedup_geomean_all", "correct_rate"):
        assert f'id="metric-{metric_id}"' in page


def test_level_headers_link_the_glossary_and_say_which_threshold_the_values_use(client, seeded):
    page = html(client, "/levels/2/")
    assert '/glossary/#metric-fast_1"' in page
    fast_1_header = page.split('data-key="fast_1"')[1].split("</th>")[0]
    assert "speedup ≥ 1" in fast_1_header  # the almanac's fast_p columns count ≥


def test_entry_page_formats_percentages_and_does_not_repeat_facts(client, seeded):
    entry = Entry.objects.get(method__name="AI CUDA Engineer", level__number=2, hardware__name="L40S")
    page = html(client, f"/entries/{entry.pk}/")
    assert "83.0000" not in page
    assert "70.6000" not in page
    assert page.count("<dd>L40S</dd>") == 1  # 'Hardware Setup=L40S' is not shown a second time
    assert 'data-testid="measured"' in page
    measured = page.split('data-testid="measured"')[1].split("</table>")[0]
    assert "L40S" in measured
    assert "PyTorch eager" in measured
    assert "Correct kernels only" in measured
    davinci = Entry.objects.get(method__name="daVinci-kernel-14B", level__number=2)
    page = html(client, f"/entries/{davinci.pk}/")
    assert "70.6</span>" in page
    assert "70.6000" not in page
    assert "speedup ≥ p" in page.split('data-testid="measured"')[1]


def test_a_geometric_mean_is_called_geomean_speedup_on_the_entry_page(client):
    row = factories.entry("GeoMethod", gpu="H100")
    factories.reported(row, "speedup_mean", 2.5, factories.source(), aggregation=Aggregation.GEOMETRIC)
    page = html(client, f"/entries/{row.pk}/")
    assert "Geomean speedup" in page
    assert ">Mean speedup<" not in page


def test_reported_cells_carry_a_visible_mark_and_their_source(client):
    row = factories.entry("Marked", gpu="H100")
    paper = factories.source("Marked paper", url="https://example.org/paper")
    factories.reported(row, "fast_1", 42.0, paper)
    page = html(client, "/levels/2/")
    cell = page.split('data-key="fast_1" data-value="42.0"')[1].split("</td>")[0]
    assert 'class="prov-mark"' in cell
    assert ">R<" in cell
    assert 'data-source="https://example.org/paper"' in cell
    entry_page = html(client, f"/entries/{row.pk}/")
    assert 'href="https://example.org/paper"' in entry_page


def test_a_verified_row_says_its_suite_and_task_count(client):
    row = factories.entry("Scoped", gpu="H100")
    factories.verified_run(row, factories.FIVE_FAST * 4, gpu="H100", n_tasks=100)
    page = html(client, "/levels/2/")
    scope = page.split('data-testid="verified-scope"')[1].split("</span>")[0]
    assert "kernelbench suite" in scope
    assert "100 tasks" in scope


def test_the_admin_score_list_tells_same_named_entries_apart_by_hardware(admin_client, seeded):
    page = html(admin_client, "/admin/leaderboard/score/?q=AI+CUDA+Engineer")
    assert "column-hardware" in page
    assert "column-suite_and_lane" in page
    assert ">L40S<" in page
    assert ">H100<" in page


def test_a_cpu_verification_is_labelled_apart_with_its_suite_and_tasks(client):
    row = factories.entry("CpuTimed", gpu="H100")
    factories.verified_run(row, factories.FIVE_FAST, gpu="CPU", device="cpu", n_tasks=5, suite="builtin")
    assert "CpuTimed" not in html(client, "/levels/2/")  # the separate lane does not rank by default
    page = html(client, "/levels/2/?lane=all")
    line = page.split('href="/entries/' + str(row.pk) + '/"')[1].split("</tr>")[0]
    assert "✓ verified · CPU" in line
    assert "builtin suite · separate lane" in line
    scope = line.split('data-testid="verified-scope"')[1].split("</span>")[0]
    assert "builtin suite, 5 tasks, CPU timing" in scope
    assert "over the builtin suite; separate lane" in line  # the value's popover text


def test_a_value_counted_with_greater_or_equal_says_so_with_the_sign(client, seeded):
    page = html(client, "/levels/2/")
    cell = page.split('data-key="fast_1" data-value="70.6"')[1].split(">")[0]
    assert "counts speedup ≥ p" in cell
    assert "&gt;= p" not in cell
