"""Admin of reported ↔ verified pairings: staff re-pair or unpair (manual), or hand back to the rule."""

from django.contrib import admin, messages

from leaderboard import pairing
from leaderboard.models import Pairing


@admin.register(Pairing)
class PairingAdmin(admin.ModelAdmin):
    """Saving a pairing here makes it manual (never re-paired automatically); an empty reported entry
    unpairs. 'Pair automatically again' gives the chosen pairings back to leaderboard.pairing's rule."""

    list_display = ["verified", "reported", "mode", "updated"]
    list_filter = ["mode", "verified__level"]
    search_fields = ["verified__label", "verified__method__name", "reported__label", "reported__method__name"]
    autocomplete_fields = ["verified", "reported"]
    readonly_fields = ["mode", "updated"]
    actions = ["pair_automatically", "unpair"]

    def save_model(self, request, obj, form, change):
        obj.mode = Pairing.Mode.MANUAL
        super().save_model(request, obj, form, change)

    @admin.action(description="Pair automatically again (the rule decides)")
    def pair_automatically(self, request, queryset):
        entries = [p.verified for p in queryset.select_related("verified")]
        queryset.update(mode=Pairing.Mode.AUTO)
        paired = sum(1 for entry in entries if pairing.pair_entry(entry) is not None)
        self.message_user(
            request, f"{paired} of {len(entries)} entries paired by the rule.", messages.SUCCESS
        )

    @admin.action(description="Unpair (manual: the rule will not pair them again)")
    def unpair(self, request, queryset):
        count = 0
        for chosen in queryset:
            chosen.reported = None
            chosen.mode = Pairing.Mode.MANUAL
            chosen.save()
            count += 1
        self.message_user(request, f"{count} entries unpaired.", messages.SUCCESS)
