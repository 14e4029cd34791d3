"""The app meetmem runs on Brilliant Labs Frame glasses, and the message codes it and the host share.

The app is Lua on top of frame-msg's standard libraries (`FRAME_LUA_LIBS`): it streams the microphone as
audio packets, reports taps, draws the plain text it receives, and turns the microphone and the taps on
and off when asked. `meetmem.edge.frame_glasses` uploads it on connecting; `meetmem.edge.frame_sim` runs
the same protocol for the tests.
"""

from __future__ import annotations

from typing import Any

# Host -> glasses message codes (the app registers a parser for each).
TEXT_MSG = 0x0A
TAP_SUBS_MSG = 0x10
AUDIO_SUBS_MSG = 0x30
# Glasses -> host: frame-msg's audio.lua and tap.lua (RxAudio's and RxTap's defaults).
AUDIO_DATA_NON_FINAL_MSG = 0x05
AUDIO_DATA_FINAL_MSG = 0x06
TAP_MSG = 0x09
#: frame-msg's standard Lua libraries the app requires.
FRAME_LUA_LIBS = ("data", "code", "audio", "tap", "plain_text")
FRAME_APP_NAME = "meetmem_app"

FRAME_APP_LUA = r"""-- meetmem on Frame: microphone out, taps out, text in (uploaded by meetmem.edge.frame_glasses)
local data = require('data.min')
local code = require('code.min')
local audio = require('audio.min')
local tap = require('tap.min')
local plain_text = require('plain_text.min')

local TEXT_MSG = 0x0a
local TAP_SUBS_MSG = 0x10
local AUDIO_SUBS_MSG = 0x30
local LINE_HEIGHT = 60

data.parsers[TEXT_MSG] = plain_text.parse_plain_text
data.parsers[TAP_SUBS_MSG] = code.parse_code
data.parsers[AUDIO_SUBS_MSG] = code.parse_code

local function show_lines(msg)
  local i = 0
  for line in string.gmatch(msg.string .. '\n', '([^\n]*)\n') do
    if line ~= '' then
      frame.display.text(line, msg.x, msg.y + i * LINE_HEIGHT, {color=msg.color, spacing=msg.spacing})
    end
    i = i + 1
  end
  frame.display.show()
end

local function app_loop()
  local streaming = false
  frame.display.text('meetmem', 1, 1)
  frame.display.show()
  print('meetmem app running')
  while true do
    local rc, err = pcall(function()
      if data.process_raw_items() > 0 then
        if data.app_data[TEXT_MSG] ~= nil then
          show_lines(data.app_data[TEXT_MSG])
          data.app_data[TEXT_MSG] = nil
        end
        if data.app_data[TAP_SUBS_MSG] ~= nil then
          if data.app_data[TAP_SUBS_MSG].value == 1 then
            frame.imu.tap_callback(tap.send_tap)
          else
            frame.imu.tap_callback(nil)
          end
          data.app_data[TAP_SUBS_MSG] = nil
        end
        if data.app_data[AUDIO_SUBS_MSG] ~= nil then
          if data.app_data[AUDIO_SUBS_MSG].value == 1 then
            if not streaming then
              audio.start({sample_rate=@SAMPLE_RATE@, bit_depth=@BIT_DEPTH@})
              streaming = true
            end
          else
            -- read_and_send_audio drains what the microphone buffered, then sends the final packet
            audio.stop()
          end
          data.app_data[AUDIO_SUBS_MSG] = nil
        end
      end
      if streaming then
        local sent = audio.read_and_send_audio()
        if sent == nil then
          streaming = false
        elseif sent == 0 then
          frame.sleep(0.005)
        end
      else
        frame.sleep(0.05)
      end
    end)
    if rc == false then
      -- the host's break signal (or an error): leave the glasses quiet and blank
      print(err)
      audio.stop()
      frame.imu.tap_callback(nil)
      frame.display.text(' ', 1, 1)
      frame.display.show()
      break
    end
  end
end

app_loop()
"""


def frame_app_source(options: Any) -> str:
    """The Lua app for these `FrameOptions` (the microphone's rate and depth are fixed when it starts)."""
    return (FRAME_APP_LUA.replace("@SAMPLE_RATE@", str(options.sample_rate))
            .replace("@BIT_DEPTH@", str(options.bit_depth)))
